"""Independent replications of the error-search experiments: retrain each target with several seeds,
search pools drawn from each, and report every measure with a 95% interval OVER SEEDS.

Each seed retrains the black box (a new train/validation split, and for the tables a new train/test
split, so a different biased training subset), then runs ``examine.py`` on it with its own pools.
Pools within one seed overlap and are averaged, never treated as independent. Finished runs are
skipped, so an interrupted driver resumes.

    .venv/bin/python benchmarks/error_search/error_search_replications.py --tasks breast_cancer fair anes96 --seeds 0 1 2 3 4
    .venv/bin/python benchmarks/error_search/error_search_replications.py --tasks fmnist_bias --seeds 0 1 2 3 4

Writes ``<out>/<task>/seed<s>/{train,search}/`` and ``<out>/<task>/replications.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from advaudit.audits.error_search_report import aggregate_replications, replications_markdown  # noqa: E402
from advaudit.core.records import read_json, write_json  # noqa: E402

TASKS: dict[str, tuple[list[str], list[str]]] = {
    # name: (train.py overrides, examine.py overrides)
    "breast_cancer": (["experiment=error_search/train_table"], ["experiment=error_search/table"]),
    "fair": (["experiment=error_search/train_table", "dataset.name=fair",
              "dataset.bias={drop_subgroup:{class:affair,attribute:rate_marriage,low:4,high:5}}"],
             ["experiment=error_search/table", "audit.pool_size=2000"]),
    "anes96": (["experiment=error_search/train_table", "dataset.name=anes96",
                "dataset.bias={drop_subgroup:{class:dole,attribute:PID,low:0,high:2}}"],
               ["experiment=error_search/table"]),
    "fmnist_bias": (["experiment=error_search/train_fmnist_bias"], ["experiment=error_search/fmnist"]),
    "fmnist_shift": (["experiment=error_search/train_fmnist_shift"], ["experiment=error_search/fmnist"]),
    "fmnist_overfit": (["experiment=error_search/train_fmnist_overfit"], ["experiment=error_search/fmnist"]),
}


def run(script: str, overrides: list[str], run_dir: Path, log: Path) -> None:
    """One Hydra run in a child process (one torch thread), its output appended to ``log``, followed by a
    line with its wall time and the machine's 1-minute load average at its start and end (the numbers
    RESULTS quotes next to each timing)."""
    command = [sys.executable, script, *overrides, f"hydra.run.dir={run_dir}", "logger=none", "threads=1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ADVAUDIT_PROGRESS": "0",
           "WANDB_MODE": os.environ.get("WANDB_MODE", "offline")}
    with log.open("a") as stream:
        stream.write(" ".join(command) + "\n")
        stream.flush()
        load_before, start = os.getloadavg()[0], time.perf_counter()
        subprocess.run(command, check=True, stdout=stream, stderr=subprocess.STDOUT, env=env)
        stream.write(f"# {script} {run_dir}: {time.perf_counter() - start:.1f} s wall, load average "
                     f"{load_before:.2f} -> {os.getloadavg()[0]:.2f}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), required=True)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=Path("outputs/error_search_replications"))
    parser.add_argument("--search", nargs="*", default=[], help="extra examine.py overrides for every task")
    parser.add_argument("--train", nargs="*", default=[], help="extra train.py overrides for every task")
    args = parser.parse_args()
    for task in args.tasks:
        train_overrides, search_overrides = TASKS[task]
        summaries = []
        for seed in args.seeds:
            root = args.out / task / f"seed{seed}"
            root.mkdir(parents=True, exist_ok=True)
            target = root / "train" / "checkpoints" / "target.pt"
            if not target.exists():
                run("train.py", [*train_overrides, *args.train, f"seed={seed}"], root / "train", root / "log.txt")
            summary = root / "search" / "summary.json"
            if not summary.exists():
                run("examine.py", [*search_overrides, *args.search, f"target={target.resolve()}", f"seed={seed}"],
                    root / "search", root / "log.txt")
            trained = read_json(root / "train" / "result.json") if (root / "train" / "result.json").exists() else {}
            summaries.append({"seed": seed, "target/test_acc": trained.get("test/acc"), **read_json(summary)})
            print(f"{task} seed {seed}: done", flush=True)
        table = aggregate_replications(summaries)
        write_json(args.out / task / "replications.json", table)
        (args.out / task / "replications.md").write_text(replications_markdown(task, table), encoding="utf-8")
        print((args.out / task / "replications.md").read_text(), flush=True)


if __name__ == "__main__":
    main()
