"""``make demo``: train a target on the built-in data, audit it, and print where the report is.

Each step is a real command line (printed before it runs), so the demo doubles as a recipe.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    base = ROOT / "outputs" / "demo" / stamp
    trained = run_step("1. train a CNN on Fashion-MNIST (2 epochs)", [
        "train.py", "dataset=fashion_mnist", "model=cnn", "trainer.max_epochs=2",
        f"hydra.run.dir={base}/train_fmnist"])
    checkpoint = trained["checkpoint"]
    evaluated = run_step("2. audit it: accuracy, calibration, per-class accuracy", [
        "examine.py", "audit=evaluate", f"target={checkpoint}", f"hydra.run.dir={base}/evaluate"])
    print("\nSummary")
    print(f"  target          {checkpoint}")
    print(f"  test accuracy   {trained['test/acc']:.4f} (temperature {trained['temperature']:.2f})")
    print(f"  worst class acc {evaluated['evaluate/worst_class_acc']:.4f}")
    print(f"  report          {base}")


if __name__ == "__main__":
    main()
