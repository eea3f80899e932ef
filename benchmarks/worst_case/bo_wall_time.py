"""BO's end-to-end wall time against random search's, on the same target, seed and instances, in one run.

Each arm is one ``examine.py`` run (the whole worst-case audit: instance selection, every proposal
rendered, judged and recorded, the report); the arms run one after another and, with ``--rounds 2``,
again in the reverse order, so that the load of other jobs falls on them alike. An arm is
``NAME=EXAMINER[@REV][;override;...]``: ``@REV`` runs the package as it was at git revision ``REV``
(``git archive`` into a temporary folder), so old and new BO are measured in the same run.

Prints per arm: wall seconds (``result.json``'s ``seconds``), the examination's own seconds, E_T and the
worst valid loss with their intervals, BO's split of its own time (``examiner_state.pt``), and each arm's
wall time over random search's.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/worst_case/bo_wall_time.py --target <target.pt> \\
        --instances 55 --budget 500 --arms 'random=random,bo=bo,bo_old=bo@main' --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def package_at(revision: str, into: Path) -> Path:
    """The repository's files at ``revision`` extracted under ``into``; returns that folder."""
    folder = into / revision.replace("/", "_")
    if not folder.exists():
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True).stdout
        folder.mkdir(parents=True)
        tar = into / "rev.tar"
        tar.write_bytes(archive)
        with tarfile.open(tar) as handle:
            handle.extractall(folder)
    return folder


def run_arm(name: str, spec: str, args: argparse.Namespace, out: Path, scratch: Path) -> dict:
    """One ``examine.py`` run of arm ``spec``; returns its figures."""
    head, *overrides = spec.split(";")
    examiner, _, revision = head.partition("@")
    code = package_at(revision, scratch) if revision else ROOT
    run_dir = out / name
    command = [sys.executable, str(code / "examine.py"), "audit=worst_case", f"world={args.world}",
               f"examiner={examiner}", f"target={args.target}", f"audit.budget={args.budget}",
               f"audit.n_instances={args.instances}", f"seed={args.seed}", "threads=1", "logger=none",
               f"hydra.run.dir={run_dir}", *args.overrides, *overrides]
    search_path = os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH", "")]))  # keep the caller's
    env = {**os.environ, "PYTHONPATH": search_path, "OMP_NUM_THREADS": "1", "ADVAUDIT_THREADS": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=code, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    result = json.loads((run_dir / "result.json").read_text())
    figures = {"arm": name, "spec": spec, "process_s": wall, "seconds": result["seconds"],
               "examination_s": result["seconds_examination"],
               "E_T": [result["examine/E_T"], result["examine/E_T/lo"], result["examine/E_T/hi"]],
               "worst": [result["examine/worst"], result["examine/worst/lo"], result["examine/worst/hi"]]}
    state_file = run_dir / "examiner_state.pt"
    if state_file.exists():
        state = torch.load(state_file, weights_only=False, map_location="cpu")
        state = state.get("examiner", state) if isinstance(state, dict) else {}
        if isinstance(state, dict) and "seconds" in state:
            figures["examiner_split_s"] = {k: round(float(v), 1) for k, v in state["seconds"].items()}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--world", default="shapes")
    parser.add_argument("--instances", type=int, default=55)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arms", default="random=random,bo=bo")
    parser.add_argument("--rounds", type=int, default=1, help="2 = run the arms again in the reverse order")
    parser.add_argument("--out", default=None, help="folder for the runs (default: a temporary one)")
    parser.add_argument("overrides", nargs="*", help="examine.py overrides for every arm")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bo_wall_time_"))
    scratch = Path(tempfile.mkdtemp(prefix="bo_wall_time_src_"))
    arms = [tuple(a.split("=", 1)) for a in args.arms.split(",")]
    rows = []
    for round_ in range(args.rounds):
        for name, spec in (arms if round_ % 2 == 0 else arms[::-1]):
            rows.append(run_arm(f"{name}-{round_}", spec, args, out, scratch))
            print(json.dumps(rows[-1]), flush=True)
    random_wall = [r["seconds"] for r in rows if r["spec"].split(";")[0].split("@")[0] == "random"]
    base = sum(random_wall) / len(random_wall) if random_wall else float("nan")
    print(f"\n{args.instances} instances x {args.budget} queries, world={args.world}, seed={args.seed}, "
          f"load {os.getloadavg()[0]:.1f} at the end; out={out}")
    print("| arm | wall s | examination s | / random | E_T [95%] | worst [95%] | examiner split s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        e, w = r["E_T"], r["worst"]
        print(f"| {r['arm']} (`{r['spec']}`) | {r['seconds']:.0f} | {r['examination_s']:.0f} | {r['seconds'] / base:.2f} "
              f"| {e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}] | {w[0]:.4f} [{w[1]:.4f}, {w[2]:.4f}] "
              f"| {r.get('examiner_split_s', '-')} |")
    (out / "summary.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
