"""What ``memory: keep`` (the default) saves against ``memory: release`` (glibc's default) on one examination.

Runs the same ``examine.py`` command with ``memory=keep`` and ``memory=release``, alternating (``--rounds``
pairs, so that the machine's load falls on both alike), each in its own process at one thread, and prints
per run the wall, user and system seconds, minor page faults and peak resident memory of the process
(``wait4``'s resource use of the child), the examination's own seconds, and whether its ``steps.jsonl`` equals the first
run's byte for byte (``memory`` must not change a result). Rows go to ``<out>/rows.jsonl``, the table to
``<out>/table.md``.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/runtime/memory_keep.py --out outputs/runtime/memory_keep \\
        --set examiner=random audit.n_instances=80 audit.budget=400
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    threads = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, **threads, "PYTHONPATH": path, "ADVAUDIT_PROGRESS": "0", "WANDB_MODE": "disabled"}


def run_once(memory: str, overrides: list[str], run_dir: Path) -> dict[str, Any]:
    """One ``examine.py`` process with ``memory``; its resource use (the child's ``getrusage``, in seconds,
    faults and MiB) and the examination's seconds from its ``result.json``."""
    command = [sys.executable, "examine.py", "audit=worst_case", "threads=1", "logger=none", f"memory={memory}",
               *overrides, f"hydra.run.dir={run_dir}"]
    start = time.perf_counter()
    with open(run_dir.with_suffix(".log"), "w") as log:
        child = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)   # this child's own resource use (peak memory included)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed; see {run_dir.with_suffix('.log')}")
    result = json.loads((run_dir / "result.json").read_text())
    return {"memory": memory, "wall_s": round(wall, 1), "user_s": round(usage.ru_utime, 1),
            "system_s": round(usage.ru_stime, 1), "minor_faults": usage.ru_minflt,
            "peak_mib": round(usage.ru_maxrss / 1024), "examination_s": result.get("seconds_examination")}


def _table(rows: list[dict[str, Any]], title: str) -> str:
    keys = ("wall_s", "user_s", "system_s", "minor_faults", "peak_mib", "examination_s")
    lines = [title, "", "| memory | runs | " + " | ".join(keys) + " (medians) | steps equal to the first run's |",
             "|---|---|" + "---|" * (len(keys) + 1)]
    for memory in ("release", "keep"):
        mine = [r for r in rows if r["memory"] == memory]
        medians = [statistics.median(r[k] for r in mine) for k in keys]
        lines.append(f"| {memory} | {len(mine)} | " + " | ".join(f"{m:,.0f}" if k in ("minor_faults", "peak_mib")
                                                               else f"{m:,.1f}" for k, m in zip(keys, medians))
                     + f" | {all(r['steps_equal'] for r in mine)} |")
    release, keep = (statistics.median(r["examination_s"] for r in rows if r["memory"] == m) for m in ("release", "keep"))
    lines += ["", f"examination: release / keep = {release / keep:.2f}x"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="advaudit/demo/checkpoints/control.pt")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs (release, keep), alternating")
    parser.add_argument("--set", nargs="*", default=[], help="more overrides for every run (key=value)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    overrides = [f"target={args.target}", "seed=0", *args.set]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    rows, first = [], None
    for round_ in range(args.rounds):
        for memory in ("release", "keep"):
            run_dir = args.out / f"{round_}_{memory}"
            row = run_once(memory, overrides, run_dir)
            first = first or run_dir / "steps.jsonl"
            row["steps_equal"] = filecmp.cmp(first, run_dir / "steps.jsonl", shallow=False)
            rows.append(row)
            with open(args.out / "rows.jsonl", "a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    title = (f"{' '.join(overrides)}; {os.cpu_count()} cores, load before {load}, after "
             f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    table = _table(rows, title)
    (args.out / "table.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
