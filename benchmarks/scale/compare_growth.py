"""How a comparison's cost grows with the number of checkpoints: ``python -m advaudit.compare`` on the first k runs.

Each k of ``--counts`` is one ``python -m advaudit.compare`` process (one thread, default design and sections:
every pair up to 3 checkpoints, else each against the baseline), on the first k of the given run folders (one
examination of each checkpoint, the same instances), its output in ``<out>/k<k>``. Prints and writes
``<out>/table.md``: pairs tested, wall and CPU seconds per k, and the ratio of the largest k to the smallest.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/scale/compare_growth.py --counts 2,5,10 --out outputs/compare_growth \\
        runs/plain_s0 runs/shift_s0 ...
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    threads = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, **threads, "PYTHONPATH": path, "ADVAUDIT_PROGRESS": "0", "WANDB_MODE": "disabled"}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def compare(runs: list[str], out: Path, extra: list[str]) -> dict[str, float | int]:
    """Wall and CPU seconds of one comparison of ``runs`` into ``out``, and the pairs its primary question tested."""
    command = [sys.executable, "-m", "advaudit.compare", *runs, "--out", str(out), *extra]
    start, used = time.perf_counter(), _cpu()
    with open(out.with_suffix(".log"), "w") as handle:
        done = subprocess.run(command, cwd=ROOT, env=_env(), stdout=handle, stderr=subprocess.STDOUT)
    wall, cpu = time.perf_counter() - start, _cpu() - used
    if done.returncode not in (0, 1):  # 1: a gate failed, still a finished comparison
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}); see {out.with_suffix('.log')}")
    return {"k": len(runs), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "pairs": _pairs(out / "pairs.csv")}


def _pairs(path: Path) -> int:
    """How many pairs of checkpoints the comparison tested (distinct ``a``, ``b`` of its ``pairs.csv``)."""
    if not path.exists():
        return 0
    with open(path, newline="") as handle:
        return len({(row["a"], row["b"]) for row in csv.DictReader(handle)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders, one per checkpoint, in the order they are taken")
    parser.add_argument("--counts", default="2,5,10")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--set", nargs="*", default=[], help="more arguments for every comparison")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    if max(counts) > len(args.runs):
        raise SystemExit(f"error: --counts asks for {max(counts)} runs but {len(args.runs)} were given")
    args.out.mkdir(parents=True, exist_ok=True)
    before = _load()
    rows = []
    for k in counts:
        rows.append(compare(args.runs[:k], args.out / f"k{k}", args.set))
        with open(args.out / "rows.jsonl", "a") as handle:
            handle.write(json.dumps(rows[-1]) + "\n")
    lines = [f"compare over k checkpoints; {platform.node()}, {os.cpu_count()} cores, load before {before}, "
             f"after {_load()}", "", "| checkpoints | pairs tested | wall s | CPU s |", "|---|---|---|---|"]
    lines += [f"| {r['k']} | {r['pairs']} | {r['wall_s']} | {r['cpu_s']} |" for r in rows]
    first, last = rows[0], rows[-1]
    lines += ["", f"{last['k']} / {first['k']} checkpoints: wall {last['wall_s'] / first['wall_s']:.2f}x, "
                  f"CPU {last['cpu_s'] / first['cpu_s']:.2f}x"]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
