"""``make demo`` on several seeds, one after the other, and the table docs/results/compare/demo.md reports.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/compare/demo_seeds.py outputs/demo_seeds --seeds 0 1 2

Each seed runs ``python -m advaudit.demo --seed S --out OUT/seedS`` (a finished seed is not run
again) and is timed; the table is then read from each folder's ``demo.json`` and ``summary.txt``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from advaudit.core.intervals import format_interval


def run_seed(out: Path, seed: int) -> None:
    folder = out / f"seed{seed}"
    if (folder / "demo.json").exists():
        return
    start = time.perf_counter()
    with open(out / f"seed{seed}.out", "w") as log:
        code = subprocess.run([sys.executable, "-m", "advaudit.demo", "--seed", str(seed), "--out", str(folder)],
                              stdout=log, stderr=subprocess.STDOUT).returncode
    with open("/proc/loadavg") as load:
        print(f"seed {seed}: exit code {code}, {(time.perf_counter() - start) / 60:.1f} min, load average at the end "
              f"{' '.join(load.read().split()[:3])}", flush=True)


def table(out: Path, seeds: list[int]) -> str:
    rows = ["| seed | minutes | test accuracy (control / narrowed) | worst-case severity p (RL E_T, BO worst) | "
            "where (factor, fifth, share narrowed / control, KS p) | check: E_T narrowed vs control, difference [95%], p "
            "| weaker named | planted found |", "|---|---|---|---|---|---|---|---|"]
    for seed in seeds:
        path = out / f"seed{seed}" / "demo.json"
        if not path.exists():
            rows.append(f"| {seed} | not run | | | | | | |")
            continue
        demo = json.loads(path.read_text())
        f = demo["findings"]
        acc = {t["name"]: t["test_acc"] for t in f["trained"]}
        severity = {v["examiner"]: f"{v['p_holm']:.2g} ({v['lower']} lower)" for v in f["severity"]}
        where, check = f.get("where"), f.get("check")
        where_cell = (f"{where['factor']} {where['region'][0]:g}-{where['region'][1]:g}, {where['share_suspect']:.2f} "
                      f"({where['suspect']}) / {where['share_other']:.2f}, {where['p']:.2g}") if where else "none"
        check_cell = (f"{check['means'].get('roll_narrowed', float('nan')):.3f} vs "
                      f"{check['means'].get('control', float('nan')):.3f}, "
                      f"{format_interval(check['diff'], check['lo'], check['hi'], 3, sign=True)} "
                      f"(lower: {check['lower']}), {check['p_holm']:.2g}") if check else "not run"
        rows.append(f"| {seed} | {demo['minutes']:.1f} | {acc.get('control', float('nan')):.3f} / "
                    f"{acc.get('roll_narrowed', float('nan')):.3f} | {severity.get('rl', '-')}, "
                    f"{severity.get('bo', '-')} | {where_cell} | {check_cell} | {demo.get('weaker')} | "
                    f"{'yes' if demo['found_planted'] else 'no'} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--table-only", action="store_true", help="only print the table of finished seeds")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        for seed in args.seeds:
            run_seed(out, seed)
    print(table(out, args.seeds))


if __name__ == "__main__":
    main()
