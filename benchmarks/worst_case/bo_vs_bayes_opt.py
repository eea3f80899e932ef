"""advaudit's batched BoTorch GP-UCB against the `bayesian-optimization` package (the paper's
implementation) on the same ShapeWorld instances, budget and seeds.

bayes_opt optimises one instance at a time (``suggest``/``register``); ours optimises all N at once.
Both: 2 random initial points, UCB with kappa = 2.576 (beta = kappa^2), 9 searched factors
(sun angles fixed per instance), loss = 1 - true-class probability.

    .venv/bin/python benchmarks/worst_case/bo_vs_bayes_opt.py --target <shapes target.pt> \
        [--instances 10] [--budget 100] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from advaudit.audits.worst_case import ConditionSpace
from advaudit.examiners.bo import BOExaminer
from advaudit.models import load_target
from advaudit.runtime import configure_threads
from advaudit.worlds.shapes import ShapeWorld


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configure_threads(args.threads)
    from bayes_opt import BayesianOptimization, acquisition

    target = load_target(args.target)
    world = ShapeWorld(image_size=target.input_shape[-1])
    z = world.instances("test")
    z = z.subset(torch.randperm(len(z), generator=torch.Generator().manual_seed(args.seed))[: args.instances])
    space = ConditionSpace(list(world.factors), ["sun_rot_x", "sun_rot_y", "sun_rot_z"], len(z),
                           torch.Generator().manual_seed(args.seed))
    d = len(space.free)

    def loss(u: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """1 - true prob for unit points ``u`` ``[n, q, d]`` of instances ``rows``."""
        sub = z.subset(rows)
        p = target.predict_proba(world.render(sub, space.assemble(u, rows)), calibrated=False)
        return 1 - p.gather(1, sub.labels.repeat_interleave(u.shape[1]).view(-1, 1)).view(len(rows), -1)

    everyone = torch.arange(len(z))
    start = time.perf_counter()
    ours = BOExaminer(len(z), d, seed=args.seed)
    for _ in range(args.budget):
        u = ours.ask()
        ours.tell(u, loss(u, everyone))
    ours_s = time.perf_counter() - start
    ours_best = ours.Y.max(1).values.numpy()

    theirs_best, theirs_s = [], 0.0
    for i in range(len(z)):
        start = time.perf_counter()
        optimizer = BayesianOptimization(f=None, pbounds={f"x{j}": (0.0, 1.0) for j in range(d)}, verbose=0,
                                         acquisition_function=acquisition.UpperConfidenceBound(kappa=2.576),
                                         random_state=args.seed + i, allow_duplicate_points=True)
        for step in range(args.budget):
            params = optimizer.suggest()
            u = torch.tensor([[[params[f"x{j}"] for j in range(d)]]], dtype=torch.float32)
            optimizer.register(params=params, target=float(loss(u, torch.tensor([i]))[0, 0]))
        theirs_s += time.perf_counter() - start
        theirs_best.append(optimizer.max["target"])
        print(f"  bayes_opt instance {i}: {time.perf_counter() - start:.1f} s, best loss {theirs_best[-1]:.4f}", flush=True)
    theirs_best = np.asarray(theirs_best)
    print(f"\nN={len(z)} instances, budget {args.budget} queries each, {args.threads} thread(s)")
    print("| implementation | wall time (all instances) | mean best loss (1 - true prob) | mean best true prob |")
    print("|---|---|---|---|")
    print(f"| advaudit BO (batched BoTorch) | {ours_s:.1f} s | {ours_best.mean():.4f} | {1 - ours_best.mean():.4f} |")
    print(f"| bayes_opt 3.4 (sequential) | {theirs_s:.1f} s | {theirs_best.mean():.4f} | {1 - theirs_best.mean():.4f} |")
    print(f"speed-up: {theirs_s / ours_s:.1f}x; instances where ours found an equal or worse case: "
          f"{int((ours_best >= theirs_best - 1e-9).sum())}/{len(z)}")


if __name__ == "__main__":
    main()
