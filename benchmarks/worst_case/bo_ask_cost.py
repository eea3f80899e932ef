"""What one BO step costs as the history grows: the acquisition's O(n^2) term, measured directly.

For each history size n, a BO examiner (defaults of ``conf/examiner/bo.yaml``) over ``--instances``
instances is told n random observations of the planted objective (one factorisation, hyperparameters
fitted once), then asks and is told ``--steps`` times; the median time of one ask + tell (growing
``L^-1`` by one point, screen, refinement) is printed per n, with the examiner's own split. Summing
the fitted ``a + b n + c n^2`` over n = 1..T estimates an examination's acquisition cost at budgets
too long to run (``--budget``); the GP refits come on top (see ``benchmarks/scale/scaling.py``).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/worst_case/bo_ask_cost.py --instances 10 --sizes 250,500,1000,1500,2000 --budget 2000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from examiner_speed import N_DIMS_PLANTED, make_examiner, planted_loss  # noqa: E402

from advaudit.runtime import configure_threads  # noqa: E402


def step_seconds(n_instances: int, n_points: int, steps: int, seed: int) -> tuple[float, dict[str, float]]:
    """Median seconds of one ask + tell at history size ``n_points``, and the split of those steps."""
    phase = torch.rand(n_instances, N_DIMS_PLANTED, generator=torch.Generator().manual_seed(seed + 1)) * 6.28
    u = torch.rand(n_instances, n_points, N_DIMS_PLANTED, generator=torch.Generator().manual_seed(seed + 2)).double()
    examiner = make_examiner("bo", n_instances, N_DIMS_PLANTED, seed, None, {})
    examiner.tell(u.float(), planted_loss(u, phase.double()))
    proposal = examiner.ask()  # first ask: full factorisation and the fit, not a step's cost
    examiner.tell(proposal, planted_loss(proposal.double(), phase.double()))
    before = dict(examiner.seconds)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        proposal = examiner.ask()
        examiner.tell(proposal, planted_loss(proposal.double(), phase.double()))
        times.append(time.perf_counter() - start)
    split = {k: (examiner.seconds[k] - before[k]) / steps for k in before}
    return statistics.median(times), split


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--sizes", default="250,500,1000,1500,2000")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configure_threads(args.threads)
    sizes = [int(n) for n in args.sizes.split(",")]
    print(f"| n | s per step (N = {args.instances}) | of which growing L^-1 | screen | refinement | fit |\n"
          "|---|---|---|---|---|---|")
    seconds = []
    for n in sizes:
        median, split = step_seconds(args.instances, n, args.steps, args.seed)
        seconds.append(median)
        print(f"| {n:,} | {median:.3f} | {split['factor']:.3f} | {split['screen']:.3f} | {split['refine']:.3f} | "
              f"{split['fit']:.3f} |", flush=True)
    a, b, c = np.polynomial.polynomial.polyfit(sizes, seconds, 2)
    n = np.arange(1, args.budget + 1)
    total = float((a + b * n + c * n ** 2).clip(min=0).sum())
    print(f"fit a + b n + c n^2: a = {a:.3g}, b = {b:.3g}, c = {c:.3g}; summed over n = 1..{args.budget}: "
          f"{total:.0f} s of acquisition for T = {args.budget} (GP refits not included)")


if __name__ == "__main__":
    main()
