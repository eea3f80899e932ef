"""How fast, and how good, are the decision-based attacks behind adversarial distance?

Times advaudit's batched HopSkipJump on a 2,000-image Fashion-MNIST pool (target: 2k goal <= 5 min
on the 2-core CPU), compares its distances with a long-run reference (HSJ, 24 steps, 64-128
probes) on a subset (median ratio, Spearman rank correlation: what the ranking needs), and times
foolbox 3's BoundaryAttack / HopSkipJumpAttack per image on a few images.

    .venv/bin/python benchmarks/adversarial_distance_speed.py <target.pt> [--items 2000] [--reference 200]
"""

from __future__ import annotations

import argparse
import time

import torch
from scipy.stats import spearmanr

from advaudit.audits.common import target_datamodule
from advaudit.models import load_target
from advaudit.search.attacks import batched_hop_skip_jump, foolbox_attack, mae, nearest_differently_labelled
from advaudit.search.scorers import label_function


def hsj(x: torch.Tensor, pool: torch.Tensor, labels, **settings) -> tuple[torch.Tensor, float, float]:
    """MAE per item, seconds, queries per item."""
    start = time.perf_counter()
    starts = nearest_differently_labelled(x, labels(x), pool, labels(pool))
    result = batched_hop_skip_jump(x, labels, starts, **settings)
    return mae(x, result.adversarial), time.perf_counter() - start, result.queries / len(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--reference", type=int, default=200, help="items for the quality reference (0: skip)")
    parser.add_argument("--foolbox", type=int, default=16, help="images for the foolbox timings (0: skip)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    target = load_target(args.target)
    x = target_datamodule(target).splits["test"].x[: args.items]
    labels = label_function(target)
    fast = dict(steps=4, gradient_queries=16, max_gradient_queries=32, binary_steps=8)
    d_fast, seconds, queries = hsj(x, x, labels, **fast)
    print(f"hsj fast {fast}: {len(x)} items in {seconds:.1f} s ({len(x) / seconds:.1f} items/s, "
          f"{queries:.0f} queries/item, {queries * len(x) / seconds:.0f} forward/s)")
    if args.reference:
        sub = torch.arange(min(args.reference, len(x)))
        reference = dict(steps=24, gradient_queries=64, max_gradient_queries=128, binary_steps=12)
        d_ref, seconds_ref, queries_ref = hsj(x[sub], x, labels, **reference)
        ratio = (d_fast[sub] / d_ref).median()
        rho = spearmanr(d_fast[sub].numpy(), d_ref.numpy()).statistic
        print(f"hsj reference {reference}: {len(sub)} items in {seconds_ref:.1f} s ({queries_ref:.0f} queries/item)")
        print(f"fast / reference MAE: median ratio {float(ratio):.2f}, Spearman rank correlation {rho:.3f}")
    foolbox_runs = (("hop_skip_jump", 16, {"max_gradient_eval_steps": 128}), ("boundary", 1000, {}))
    for method, steps, params in foolbox_runs if args.foolbox else ():
        part = x[: args.foolbox]
        start = time.perf_counter()
        result = foolbox_attack(part, target.eval(), method, steps=steps, **params)
        took = time.perf_counter() - start
        found = mae(part, result.adversarial)
        print(f"foolbox {method} steps={steps}: {len(part)} items in {took:.1f} s ({took / len(part):.2f} s/item); "
              f"MAE / fast-hsj MAE median {float((found / d_fast[: len(part)]).nanmedian()):.2f}; "
              f"failures {int((~result.ok).sum())}")


if __name__ == "__main__":
    main()
