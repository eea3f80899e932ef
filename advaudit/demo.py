"""``make demo``: train a ShapeWorld target, examine it with the RL and the BO examiner, compare.

Each step is a real command line (printed before it runs), so the demo doubles as a recipe.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUN = "audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]"


def run_step(title: str, args: list[str]) -> dict:
    """Run ``python <args>`` in the repo root; return the run's result.json."""
    run_dir = next(a.split("=", 1)[1] for a in args if a.startswith("hydra.run.dir="))
    print(f"\n== {title}\n$ python {' '.join(args)}", flush=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True)
    result = json.loads((Path(run_dir) / "result.json").read_text())
    print(f"-- done in {time.perf_counter() - start:.0f} s: {run_dir}", flush=True)
    return result


def main() -> None:
    base = ROOT / "outputs" / "demo" / time.strftime("%Y-%m-%d_%H-%M-%S")
    trained = run_step("1. train a ResNet-18 (width 16) on ShapeWorld renders (10 classes, 12 factors)", [
        "train.py", "dataset=shapes", "model=resnet18", "model.arch_params.width=16", "trainer.max_epochs=10",
        f"hydra.run.dir={base}/train_shapes"])
    checkpoint = trained["checkpoint"]
    examinations = {}
    for examiner, budget in (("rl", 320), ("bo", 100)):
        examinations[examiner] = run_step(f"2. examine it with the {examiner.upper()} examiner ({budget} queries per instance)", [
            "examine.py", "audit=worst_case", "world=shapes", f"examiner={examiner}", f"target={checkpoint}",
            f"audit.budget={budget}", f"audit.report_budgets=[0,{budget // 4},{budget}]", SUN,
            f"hydra.run.dir={base}/examine_{examiner}"])
    runs = [str(base / f"examine_{name}") for name in examinations]
    print(f"\n== 3. leaderboard\n$ python -m advaudit.report.leaderboard {' '.join(runs)} --metric examine/E_T "
          f"--ascending --out {base}")
    subprocess.run([sys.executable, "-m", "advaudit.report.leaderboard", *runs, "--metric", "examine/E_T",
                    "--ascending", "--out", str(base)], cwd=ROOT, check=True)
    print("\nSummary")
    print(f"  target              {checkpoint} (test accuracy {trained['test/acc']:.3f} under random conditions)")
    for name, result in examinations.items():
        print(f"  {name.upper():3} examiner        E_T (true-class prob of its proposals) {result['examine/E_T@0']:.3f} "
              f"at T=0 -> {result['examine/E_T']:.3f} [{result['examine/E_T/lo']:.3f}, {result['examine/E_T/hi']:.3f}] "
              f"after {result['queries_per_instance']} queries; worst valid case {result['examine/worst']:.3f}; "
              f"a valid failure for {100 * result['examine/failure_rate']:.0f}% of instances, "
              f"{100 * result['examine/invalid_share']:.0f}% of proposals invalid")
        print(f"                      report: {result['report']}")


if __name__ == "__main__":
    main()
