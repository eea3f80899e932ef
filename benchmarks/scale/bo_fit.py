"""BO's GP hyperparameters fitted jointly (BoTorch's one L-BFGS-B run over all instances) against each instance's own
fit (``examiner.fit=per_instance``, the fit a shard reproduces): the same examination, E_T and worst per fit, their
paired difference over instances with its 95% interval, and each run's wall and fitting time.

Each arm is one ``examine.py`` run (one thread), one after the other, on every seed given.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/scale/bo_fit.py --target advaudit/demo/checkpoints/control.pt \\
        --examiner bo_batch --instances 55 --budget 500 --seeds 0,1 --out outputs/bo_fit
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from advaudit.core.intervals import mean_with_ci

ROOT = Path(__file__).resolve().parents[2]
FITS = ("joint", "per_instance")


def run(args: argparse.Namespace, fit: str, seed: int) -> dict:
    run_dir = args.out / f"{fit}_s{seed}"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "ADVAUDIT_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if not (run_dir / "result.json").exists():
        start = time.perf_counter()
        command = [sys.executable, "examine.py", "audit=worst_case", f"examiner={args.examiner}", f"examiner.fit={fit}",
                   f"target={args.target}", f"audit.n_instances={args.instances}", f"audit.budget={args.budget}",
                   f"seed={seed}", "threads=1", "logger=none", f"hydra.run.dir={run_dir}", *args.set]
        with open(run_dir.with_suffix(".log"), "w") as log:
            subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
        (run_dir / "wall.json").write_text(json.dumps({"wall_s": time.perf_counter() - start}))
    result = json.loads((run_dir / "result.json").read_text())
    state = torch.load(run_dir / "examiner_state.pt", weights_only=True)["examiner"]
    rows = sorted(result["per_instance"], key=lambda r: r["instance"])
    return {"E_T": np.array([r["E_T"] for r in rows]), "worst": np.array([np.nan if r["worst"] is None else r["worst"]
                                                                          for r in rows]),
            "summary": result, "wall_s": json.loads((run_dir / "wall.json").read_text())["wall_s"],
            "fit_s": state["seconds"]["fit"], "n_fits": state["n_fits"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--examiner", default="bo_batch")
    parser.add_argument("--instances", type=int, default=55)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--set", nargs="*", default=[], help="more overrides for both arms")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"| seed | fit | E_T | worst | wall s | fit s (fits) |\n|---|---|---|---|---|---|")
    differences = {"E_T": [], "worst": []}
    for seed in map(int, args.seeds.split(",")):
        arms = {fit: run(args, fit, seed) for fit in FITS}
        for fit, arm in arms.items():
            s = arm["summary"]
            print(f"| {seed} | {fit} | {s['examine/E_T']:.4f} [{s['examine/E_T/lo']:.4f}, {s['examine/E_T/hi']:.4f}] | "
                  f"{s['examine/worst']:.4f} | {arm['wall_s']:.0f} | {arm['fit_s']:.1f} ({arm['n_fits']}) |")
        for key in differences:
            differences[key].append(arms["per_instance"][key] - arms["joint"][key])
    for key, parts in differences.items():
        diff = np.concatenate(parts)
        ci = mean_with_ci(diff[np.isfinite(diff)])
        print(f"\nper_instance - joint, {key}: {ci['mean']:+.4f} [{ci['lo']:+.4f}, {ci['hi']:+.4f}] (95% bootstrap over "
              f"{int(np.isfinite(diff).sum())} instance-seeds, paired)")


if __name__ == "__main__":
    main()
