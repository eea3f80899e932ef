"""Why does the RL examiner concentrate (or not) on a planted weakness? A measured answer on a
known objective, in seconds instead of hours of rendering.

The objective imitates a target with a planted weakness on one of 9 searched factors: the
true-class probability is ``p_in`` inside the region (a third of that factor's range, at its low
end) and ``p_out`` outside, plus Gaussian query noise (other factors and the instance's texture
matter too), clipped to [0, 1]; the examiner's loss is ``1 - p``, exactly as the worst-case audit
tells it. For each RL setting (baseline, learning rate) and budget in iterations (policy updates
of q = 32), it reports the share of the last 2 iterations' proposals inside the region (random
search: 1/3), the mean true-class probability of those proposals (the paper's E_T), with a 95%
bootstrap interval over seeds.

    .venv/bin/python benchmarks/worst_case/rl_concentration_synthetic.py [--iterations 16,100,250] [--seeds 2]
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from advaudit.examiners import build_examiner
from advaudit.core.intervals import format_summary, mean_with_ci

N_INSTANCES, DIMS, WEAK_DIM, REGION_HIGH = 10, 9, 7, 1 / 3


def true_class_prob(u: torch.Tensor, p_in: float, p_out: float, noise: float, generator: torch.Generator) -> torch.Tensor:
    """``u`` ``[N, q, D]`` in the unit cube -> true-class probability ``[N, q]``."""
    inside = u[..., WEAK_DIM] < REGION_HIGH
    base = torch.where(inside, torch.tensor(p_in), torch.tensor(p_out))
    return (base + noise * torch.randn(base.shape, generator=generator)).clamp(0, 1)


def examine(options: dict, budgets: list[int], seed: int, p_in: float, p_out: float, noise: float,
            late_iterations: int = 2) -> dict[int, tuple[float, float]]:
    """Per budget T (iterations): the share of the proposals of iterations T-1, T (the late
    window) inside the region and their mean true-class probability. One run to max(budgets):
    a run stopped at T is the prefix of a longer one."""
    examiner = build_examiner({"name": "rl", **options}, N_INSTANCES, DIMS, seed=seed)
    generator = torch.Generator().manual_seed(1000 + seed)
    inside, probs = [], []
    for _ in range(max(budgets)):
        u = examiner.ask()
        p = true_class_prob(u, p_in, p_out, noise, generator)
        examiner.tell(u, 1 - p)
        inside.append(float((u[..., WEAK_DIM] < REGION_HIGH).float().mean()))
        probs.append(float(p.mean()))
    return {t: (sum(inside[t - late_iterations:t]) / late_iterations, sum(probs[t - late_iterations:t]) / late_iterations)
            for t in budgets}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", default="16,100,250")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--baselines", default="ema,batch_mean,none")
    parser.add_argument("--lrs", default="0.001,0.01")
    parser.add_argument("--p-in", type=float, default=0.3)
    parser.add_argument("--p-out", type=float, default=0.8)
    parser.add_argument("--noise", type=float, default=0.2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    budgets = [int(x) for x in args.iterations.split(",")]
    print(f"planted region: factor {WEAK_DIM} of {DIMS} in [0, {REGION_HIGH:.3f}] (volume share 0.333); "
          f"p_in={args.p_in}, p_out={args.p_out}, noise sd {args.noise}; N={N_INSTANCES}, q=32, "
          f"{args.seeds} seeds; late = last 2 iterations\n")
    print("| baseline | lr | " + " | ".join(f"share @T={t} | E_T @T={t}" for t in budgets) + " |")
    print("|---|---|" + "---|---|" * len(budgets))
    started = time.perf_counter()
    for baseline, lr in itertools.product(args.baselines.split(","), [float(x) for x in args.lrs.split(",")]):
        cells = []
        runs = [examine({"q": 32, "lr": lr, "baseline": baseline}, budgets, seed, args.p_in, args.p_out, args.noise)
                for seed in range(args.seeds)]
        for t in budgets:
            share = mean_with_ci([r[t][0] for r in runs])
            e_t = mean_with_ci([r[t][1] for r in runs])
            cells.append(f"{format_summary(share)} | {e_t['mean']:.3f}")
        print(f"| {baseline} | {lr:g} | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
