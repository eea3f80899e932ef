"""Do the examiners concentrate on a planted weakness at an angle's seam, and do they pile up at the
ends of an angle where there is none? A synthetic answer in minutes (no model, no rendering).

The objective (:func:`loss`; 9 factors) is a smooth background, periodic in factor 0, plus a step of
0.5 on a fifth of factor 0: ``wrap`` puts the fifth around the seam of factor 0 (within 0.1 of
0 = 1, an angle's 324-36 deg), ``middle`` at [0.7, 0.9]. A *control* has no step: the share of its
late proposals in the same fifth shows where an examiner goes by itself (0.2 = uniform; the
background's maximum along factor 0 is uniform over instances).
Factor 0 is declared periodic or not (``circle`` / ``box``). Per examiner, setting and seed: the
share of each instance's last ``--last`` proposals in the fifth, pooled over instances; the table
gives the mean over seeds with a 95% bootstrap interval over seeds, and the ratios to the volume
share (0.2) and to the control.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/worst_case/periodic_concentration.py [--examiners bo,tpe,cmaes,rl] \
        [--seeds 0,1,2] [--instances 10] [--budget 300] [--rl-budget 3200]
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import torch

from advaudit.examiners import build_examiner
from advaudit.core.intervals import format_summary, mean_with_ci
from advaudit.runtime import configure_threads
import sys
from pathlib import Path
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from examiner_speed import N_DIMS_PLANTED, PLANTED, PLANTED_FACTOR, in_planted

Q = {"rl": 32, "random": 32}


def loss(u: torch.Tensor, phase: torch.Tensor, at: str, weakened: bool, step_height: float = 0.5,
         noise: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """``[N, q, C] -> [N, q]``: ``0.2 + 0.1 mean_c sin(k_c u_c + phase_c)`` with ``k_0 = 2 pi`` (factor 0's
    background is itself periodic, so 0 and 1 are the same condition and its maximum is uniform over
    instances) and ``k_c = 3`` otherwise, plus, when ``weakened``, a step of ``step_height`` on the planted
    fifth, plus Gaussian query noise of std ``noise`` (other factors and the instance's texture matter too)."""
    k = torch.full((u.shape[-1],), 3.0, dtype=u.dtype)
    k[PLANTED_FACTOR] = 2 * math.pi
    background = 0.2 + 0.1 * torch.sin(k * u + phase[:, None]).mean(-1)
    if noise:
        background = background + noise * torch.randn(background.shape, generator=generator, dtype=u.dtype)
    if not weakened:
        return background
    x = u[..., PLANTED_FACTOR]
    if at == "wrap":
        step = torch.sigmoid((0.1 - torch.minimum(x, 1 - x)) * 80)
    else:
        step = torch.sigmoid((x - PLANTED[0]) * 80) * torch.sigmoid((PLANTED[1] - x) * 80)
    return background + step_height * step


def late_share(name: str, at: str, weakened: bool, circle: bool, seed: int, n: int, budget: int, last: int,
               step_height: float = 0.5, noise: float = 0.0) -> float:
    periodic = [circle] + [False] * (N_DIMS_PLANTED - 1)
    examiner = build_examiner({"name": name, "q": Q.get(name, 1)}, n, N_DIMS_PLANTED, seed=seed, periodic=periodic)
    phase = torch.rand(n, N_DIMS_PLANTED, generator=torch.Generator().manual_seed(seed + 1)).double() * 6.28
    generator = torch.Generator().manual_seed(1000 + seed)
    for _ in range(budget // examiner.q):
        u = examiner.ask()
        examiner.tell(u, loss(u.double(), phase, at, weakened, step_height, noise, generator))
    late = examiner.X[:, -last:, PLANTED_FACTOR]
    return float(in_planted(late, at).double().mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examiners", default="bo,tpe,cmaes,rl")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--budget", type=int, default=300, help="queries per instance (BO, TPE, CMA-ES)")
    parser.add_argument("--rl-budget", type=int, default=3200, help="queries per instance for RL (q = 32)")
    parser.add_argument("--last", type=int, default=64)
    parser.add_argument("--at", default="wrap,middle")
    parser.add_argument("--step", type=float, default=0.5, help="height of the planted step")
    parser.add_argument("--noise", type=float, default=0.0, help="std of Gaussian query noise")
    args = parser.parse_args()
    configure_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"N = {args.instances}, budget {args.budget} (RL {args.rl_budget}) queries per instance, last {args.last}, "
          f"seeds {seeds}, step {args.step}, noise {args.noise}")
    print("| examiner | planted at | factor 0 as | weakened: share [95% CI over seeds] | control: share | "
          "weakened / 0.2 | weakened / control | s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, at, circle in itertools.product(args.examiners.split(","), args.at.split(","), (True, False)):
        start = time.perf_counter()
        budget = args.rl_budget if name == "rl" else args.budget
        weak = [late_share(name, at, True, circle, s, args.instances, budget, args.last, args.step, args.noise)
                for s in seeds]
        control = [late_share(name, at, False, circle, s, args.instances, budget, args.last, args.step, args.noise)
                   for s in seeds]
        w, c = mean_with_ci(weak), mean_with_ci(control)
        print(f"| {name} | {at} | {'circle' if circle else 'box'} | {format_summary(w)} | {format_summary(c)} | "
              f"{w['mean'] / 0.2:.1f} | "
              f"{w['mean'] / max(c['mean'], 1e-9):.1f} | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
