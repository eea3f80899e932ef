"""One audit as one job against the same audit split over K shards (``audit.shards=K``), end to end.

Two modes, each one run of this script (the arms one after another, so that the machine's load falls on them
alike; ``--order`` alternates them):

- ``parallel``: the whole multirun (``examine.py -m``, joblib launcher: examinations or scoring, the merge and the
  report, the sweep's comparison), one job at one thread (``hydra.launcher.n_jobs=1 threads=1``) against K shards
  of one thread each in parallel (``n_jobs=K``): workers of equal size, as K one-core machines would be. Needs K
  idle cores: run it under ``/work/coord/quiet`` on a shared machine.
- ``sequential``: one job (``examine.py``, one thread), then the K shards one after another (each its own
  ``examine.py`` process at one thread), then ``python -m advaudit.merge``. The critical path of K workers is the
  slowest shard plus the merge (with the report): one job's wall time over it is the speed-up K workers would
  give. Needs one idle core only.

Worst case: ``--audit worst_case --examiner rl`` with ``--instances`` and ``--budget`` (ShapeWorld, stratified
instances); error search: ``--audit error_search`` with the overrides its experiment needs (``--set``).
Each finished arm is appended to ``<out>/rows.jsonl``; the table is printed at the end (and written to
``<out>/table.md``), with each arm's headline number (E_T inside S, SDR@20) to show the arms examined the same.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/scale/split_speed.py --mode sequential --shards 8 \\
        --audit worst_case --examiner rl --target advaudit/demo/checkpoints/control.pt --instances 80 \\
        --budget 2000 --out outputs/split/rl_k8
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HEADLINE = {"worst_case": "examine/E_T_valid", "error_search": "search/sdr@20"}


def _env() -> dict[str, str]:
    threads = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, **threads, "PYTHONPATH": path, "ADVAUDIT_PROGRESS": "0", "WANDB_MODE": "disabled"}


def _overrides(args: argparse.Namespace) -> list[str]:
    common = [f"target={args.target}", f"seed={args.seed}", "threads=1", "logger=none", *args.set]
    if args.audit == "worst_case":
        return ["audit=worst_case", f"examiner={args.examiner}", f"audit.n_instances={args.instances}",
                f"audit.budget={args.budget}", *common]
    return [f"experiment={args.experiment}", *common]


def _timed(command: list[str], log: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of ``command``, run from the repository
    root; its output goes to ``log``. On a shared machine the CPU seconds are what one idle core would take."""
    start, used = time.perf_counter(), _children_cpu()
    with open(log, "w") as handle:
        done = subprocess.run(command, cwd=ROOT, env=_env(), stdout=handle, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}); see {log}")
    return time.perf_counter() - start, _children_cpu() - used


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _headline(result: Path, audit: str) -> float | None:
    value = json.loads(result.read_text()).get(HEADLINE[audit]) if result.exists() else None
    return None if value is None else round(float(value), 6)


def parallel_arm(args: argparse.Namespace, k: int, out: Path) -> dict[str, Any]:
    """The whole multirun with ``k`` jobs of one thread at once (k = 1: the one job)."""
    shards = ["audit.shards=1"] if k == 1 else [f"audit.shards={k}", "audit.shard=" + ",".join(map(str, range(k)))]
    command = [sys.executable, "examine.py", "-m", "hydra/launcher=parallel", f"hydra.launcher.n_jobs={k}",
               *_overrides(args), *shards, f"hydra.sweep.dir={out}"]
    wall, cpu = _timed(command, out.with_suffix(".log"))
    merged = sorted(out.glob("merged/*/result.json"))
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "headline": _headline(merged[0] if merged else out / "0" / "result.json",
                                                             args.audit)}


def sequential_arms(args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """One job, then the K shards one after another, then their merge: each one process at one thread. The
    critical path is counted in CPU seconds (what an idle one-core worker takes); wall seconds are kept too.
    ``--arms one`` / ``--arms shards`` runs one of the two (two shorter measurements; the shards' row reads the
    one job's from ``<out>/rows.jsonl``)."""
    base = [sys.executable, "examine.py", *_overrides(args)]
    rows = []
    if "one" in args.arms.split(","):
        one, one_cpu = _timed([*base, f"hydra.run.dir={out / 'one'}"], out / "one.log")
        rows.append({"arm": "one job", "wall_s": round(one, 1), "cpu_s": round(one_cpu, 1),
                     "headline": _headline(out / "one" / "result.json", args.audit)})
    if "shards" in args.arms.split(","):
        rows.append(_shards_arm(args, base, out))
    return rows


def _shards_arm(args: argparse.Namespace, base: list[str], out: Path) -> dict[str, Any]:
    walls, cpus = [], []
    for shard in range(args.shards):
        run_dir = out / f"shard_{shard}"
        wall, cpu = _timed([*base, f"audit.shards={args.shards}", f"audit.shard={shard}", f"hydra.run.dir={run_dir}"],
                           out / f"shard_{shard}.log")
        walls.append(wall)
        cpus.append(cpu)
    merge_log = out / "merge.log"
    merge, merge_cpu = _timed([sys.executable, "-m", "advaudit.merge", *[str(out / f"shard_{s}") for s in
                                                                          range(args.shards)],
                               "--out", str(out / "merged")], merge_log)
    inside = re.search(r"merged \d+ shards in ([0-9.]+) s", merge_log.read_text())
    merge_own = float(inside.group(1)) if inside else merge  # the merge itself, without its imports (wall)
    return {"arm": f"{args.shards} shards", "shard_walls_s": [round(w, 1) for w in walls],
            "shard_cpus_s": [round(c, 1) for c in cpus], "merge_wall_s": round(merge, 1),
            "merge_own_wall_s": round(merge_own, 1), "merge_cpu_s": round(merge_cpu, 1),
            "critical_path_cpu_s": round(max(cpus) + merge_cpu, 1),
            "critical_path_wall_s": round(max(walls) + merge, 1),
            "headline": _headline(out / "merged" / "result.json", args.audit)}


def _speed_ups(one: dict[str, Any], split: dict[str, Any]) -> None:
    """The projected speed-ups of ``split`` (the shards' row) against ``one`` (the one job's), in place."""
    split["speed_up_cpu"] = round(one["cpu_s"] / split["critical_path_cpu_s"], 2)
    split["speed_up_wall"] = round(one["wall_s"] / split["critical_path_wall_s"], 2)


def _machine() -> str:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    return f"{platform.node()}, {os.cpu_count()} cores, load {load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("parallel", "sequential"), required=True)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--audit", choices=tuple(HEADLINE), default="worst_case")
    parser.add_argument("--examiner", default="rl")
    parser.add_argument("--experiment", default="error_search/fmnist", help="error search: the experiment config")
    parser.add_argument("--target", required=True)
    parser.add_argument("--instances", type=int, default=80)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", nargs="*", default=[], help="more overrides for every arm (key=value)")
    parser.add_argument("--order", default="one,shards", help="parallel: arms in this order, e.g. one,shards,shards,one")
    parser.add_argument("--arms", default="one,shards", help="sequential: one, shards or both (the shards' row "
                        "then reads the one job's from <out>/rows.jsonl)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    label = args.examiner if args.audit == "worst_case" else args.experiment
    rows = []
    if args.mode == "sequential":
        before = _machine()
        rows = sequential_arms(args, args.out)
    else:
        before = _machine()
        for i, arm in enumerate(args.order.split(",")):
            k = 1 if arm == "one" else args.shards
            row = parallel_arm(args, k, args.out / f"{i}_{arm}")
            rows.append({"arm": "one job" if k == 1 else f"{k} shards", **row})
    for row in rows:
        row.update(audit=args.audit, what=label, mode=args.mode, machine_before=before, machine_after=_machine())
    if args.mode == "sequential":
        rows = _with_earlier_one(rows, args.out / "rows.jsonl")
    for row in rows:
        if not row.pop("earlier", False):
            with open(args.out / "rows.jsonl", "a") as handle:
                handle.write(json.dumps(row) + "\n")
    if len(rows) < 2:
        print(json.dumps(rows[0]))
        return
    table = _table(rows, args)
    (args.out / "table.md").write_text(table)
    print(table)


def _with_earlier_one(rows: list[dict[str, Any]], earlier: Path) -> list[dict[str, Any]]:
    """Sequential rows with the one job first: this run's, else the last one job of ``earlier`` (marked), and the
    shards' speed-ups against it."""
    if rows and rows[0]["arm"] != "one job" and earlier.exists():
        ones = [json.loads(line) for line in earlier.read_text().splitlines() if '"arm": "one job"' in line]
        rows = [{**ones[-1], "earlier": True}, *rows] if ones else rows
    if len(rows) == 2:
        _speed_ups(rows[0], rows[1])
    return rows


def _table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    size = f"{args.instances} x {args.budget}" if args.audit == "worst_case" else " ".join(args.set) or args.experiment
    lines = [f"{args.audit} {rows[0]['what']} ({size}), {args.mode}, K = {args.shards}; before: "
             f"{rows[0]['machine_before']}; after: {rows[-1]['machine_after']}", ""]
    if args.mode == "parallel":
        ones = [r["wall_s"] for r in rows if r["arm"] == "one job"]
        many = [r["wall_s"] for r in rows if r["arm"] != "one job"]
        lines += ["| arm | wall s | CPU s | headline |", "|---|---|---|---|"]
        lines += [f"| {r['arm']} | {r['wall_s']} | {r['cpu_s']} | {r['headline']} |" for r in rows]
        if ones and many:
            lines += ["", f"speed-up (mean one job / mean shards): {sum(ones) / len(ones) / (sum(many) / len(many)):.2f}x"]
        return "\n".join(lines) + "\n"
    one, split = rows
    lines += ["| seconds | one job | slowest shard | merge + report | critical path | speed-up | every shard |",
              "|---|---|---|---|---|---|---|",
              f"| CPU | {one['cpu_s']} | {max(split['shard_cpus_s'])} | {split['merge_cpu_s']} | "
              f"{split['critical_path_cpu_s']} | **{split['speed_up_cpu']}x** | {', '.join(map(str, split['shard_cpus_s']))} |",
              f"| wall | {one['wall_s']} | {max(split['shard_walls_s'])} | {split['merge_wall_s']} (without imports "
              f"{split['merge_own_wall_s']}) | {split['critical_path_wall_s']} | {split['speed_up_wall']}x | "
              f"{', '.join(map(str, split['shard_walls_s']))} |",
              "", f"headline (one job / merged): {one['headline']} / {split['headline']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
