"""How fast, and how good, are the decision-based attacks behind adversarial distance?

1. Ceiling: raw batched forward throughput of the target CNN (images/s) at several batch sizes,
   ``no_grad`` vs ``inference_mode``, NCHW vs channels-last (NHWC) weights, interleaved so machine
   load hits all alike. ``load_target`` keeps image targets' weights NHWC on a CPU.
2. Old vs new queries in the same run: ``batched_hop_skip_jump`` on ``--compare-items`` items with
   the label function of git revision ``--baseline`` on the NCHW target (as before) and the current
   one on the target as ``load_target`` gives it (NHWC weights, BatchNorm folded, batches of 128):
   seconds each, and every query of the old attack labelled by both. Where no label differs, the
   two attacks took the same path and their distances are identical.
3. The full pool (``--items``, default 2,000) with the default settings (or each of
   ``--full-settings``): wall time, queries per item, forward passes/s.
4. Ranking quality on >= ``--quality-items`` eligible items (predicted as the critical class with
   calibrated confidence > tau): distances of each attack setting against a converged reference
   (HSJ driven by the exact boundary normal, ``--reference-steps`` iterations: HSJ's limit of
   infinitely many probes); Spearman rho of the distances and SDR@k of the adversarial-distance
   ranking (LOWESS of log-MAE on confidence) over pools drawn from the eligible items, with the
   random ranking and the low-confidence ranking for scale.

    .venv/bin/python benchmarks/error_search/adversarial_distance_speed.py <target.pt> [--items 2000] [--quality-items 500]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from advaudit.audits.common import target_datamodule
from advaudit.models import load_target
from advaudit.search.settings import LowessConf
from advaudit.search.adversarial_distance import distance_values, pool_scores
from advaudit.search.attacks import (attack_box, batched_hop_skip_jump, label_function, mae, margin_direction,
                                     nearest_differently_labelled)
from advaudit.search.metrics import sdr_curve
from advaudit.search.pools import draw_pools, eligible
import sys
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from revision import package_module_at_revision  # benchmarks/ is on sys.path

HSJ_KEYS = ("steps", "gradient_queries", "max_gradient_queries", "binary_steps", "probe_resolution")


def default_settings() -> dict:
    """The audit's HSJ settings (the schema's defaults, which ``search=adversarial_distance`` composes
    to), so the benchmark times the default."""
    from advaudit.search.settings import DecisionAttackConf

    attack = DecisionAttackConf()
    return {k: getattr(attack, k) for k in HSJ_KEYS}


def parse_settings(spec: str) -> dict:
    """``k=v,...`` overrides of the default settings (``v`` an integer or ``none``)."""
    settings = default_settings()
    for key, value in (kv.split("=") for kv in spec.split(",") if kv):
        settings[key] = None if value.lower() in ("none", "null") else int(value)
    return settings


DEFAULT = default_settings()


def ceiling(nchw, nhwc, old_labels, x: torch.Tensor, repeats: int = 2, n: int = 2048) -> dict[str, float]:
    """Images/s of the target's forward pass for each (mode, batch size, weight layout), and of the
    old and current label functions, best of ``repeats`` interleaved; ``nchw`` / ``nhwc``: the same
    target with NCHW / channels-last weights; ``old_labels``: the baseline's label function on ``nchw``."""
    cases = {}
    for batch in (128, 256, 2048):
        cases[f"no_grad, batch {batch}"] = (torch.no_grad, batch, nchw)
        cases[f"inference_mode, batch {batch}"] = (torch.inference_mode, batch, nchw)
        cases[f"inference_mode, channels-last weights, batch {batch}"] = (torch.inference_mode, batch, nhwc)
    cases["baseline label function (NCHW, batch 256)"] = (torch.inference_mode, n, old_labels)
    cases["current label function (channels-last, BatchNorm folded, batch 128)"] = (
        torch.inference_mode, n, label_function(nhwc))
    times: dict[str, list[float]] = {k: [] for k in cases}
    n = min(len(x), n)
    for _ in range(repeats):
        for name, (mode, batch, net) in cases.items():
            start = time.perf_counter()
            with mode():
                for i in range(0, n, batch):
                    net(x[i:i + batch])
            times[name].append(time.perf_counter() - start)
    return {k: n / min(v) for k, v in times.items()}


class CheckedLabels:
    """The ``old`` label function, also asking ``new`` on every query and counting disagreements."""

    def __init__(self, old, new) -> None:
        self.old, self.new = old, new
        self.queries = self.disagreements = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        old = self.old(x)
        self.queries += len(x)
        self.disagreements += int((old != self.new(x)).sum())
        return old


def query_comparison(old_labels, new_labels, part: torch.Tensor, pool: torch.Tensor, box, settings: dict) -> str:
    """Same attack with the old and new label functions on ``part``: seconds, label agreement on every
    query of the old attack, and how many items' distances differ."""
    d_old, s_old, q_old = attack(part, pool, old_labels, box, **settings)
    d_new, s_new, q_new = attack(part, pool, new_labels, box, **settings)
    checked = CheckedLabels(old_labels, new_labels)
    d_checked, _, _ = attack(part, pool, checked, box, **settings)
    differ = ~torch.isclose(d_old, d_new, rtol=1e-5, atol=1e-7, equal_nan=True)
    relative = ((d_old - d_new).abs() / d_old).nan_to_num()
    return (f"same run, {len(part)} items, {settings}: old {s_old:.1f} s ({q_old:.1f} queries/item), "
            f"new {s_new:.1f} s ({q_new:.1f} queries/item), speed-up {s_old / s_new:.2f}x; "
            f"labels differing on the old attack's {checked.queries:,} queries: {checked.disagreements}; "
            f"items whose distance differs beyond rtol 1e-5: {int(differ.sum())} of {len(part)} "
            f"(largest relative difference {float(relative.max()):.2e}); "
            f"check run reproduces old: {torch.equal(d_checked.nan_to_num(-1.0), d_old.nan_to_num(-1.0))}")


def attack(x: torch.Tensor, pool: torch.Tensor, labels, box, **settings) -> tuple[torch.Tensor, float, float]:
    """MAE per item (box units; NaN where the attack failed), seconds, queries per item."""
    start = time.perf_counter()
    starts = nearest_differently_labelled(x, labels(x), pool, labels(pool))
    result = batched_hop_skip_jump(x, labels, starts, bounds=box, **settings)
    return mae(x, result.adversarial), time.perf_counter() - start, result.queries / len(x)


def sdr_at(distance: torch.Tensor, confidence: torch.Tensor, is_error: torch.Tensor, pools: torch.Tensor,
           ks: tuple[int, ...]) -> dict[int, float]:
    """Mean SDR@k of the adversarial-distance ranking (lowest first) over ``pools`` ``[R, P]``."""
    scores = pool_scores(distance_values(distance, True), confidence, pools, LowessConf())
    order = scores.argsort(1)
    picked = pools.gather(1, order)
    curve = sdr_curve(is_error[picked], confidence[picked])
    return {k: float(curve[:, k - 1].mean()) for k in ks}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--items", type=int, default=2000, help="pool attacked with the default settings")
    parser.add_argument("--compare-items", type=int, default=300, help="items for the old vs new comparison")
    parser.add_argument("--baseline", default="main", help="git revision of attacks.py whose label function is 'old'")
    parser.add_argument("--quality-items", type=int, default=500)
    parser.add_argument("--reference-steps", type=int, default=24)
    parser.add_argument("--settings", default="steps=2;steps=4;steps=8,gradient_queries=32,max_gradient_queries=64",
                        help="';'-separated overrides of the default settings to rank against the reference")
    parser.add_argument("--critical-class", type=int, default=0)
    parser.add_argument("--tau", type=float, default=0.65)
    parser.add_argument("--pool-size", type=int, default=250)
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reference-cache", default=None, help="file to save/reuse the reference distances")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: ceiling,compare,full,quality")
    parser.add_argument("--full-settings", default="",
                        help="';'-separated k=v,... overrides of the default, one full-pool run each")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    skip = set(args.skip.split(","))
    target = load_target(args.target).eval()  # channels-last weights on a CPU, as the audit loads it
    nchw = load_target(args.target, channels_last=False).eval()
    split = target_datamodule(target).splits["test"]
    x = split.x[: args.items]
    box = attack_box(split.x)
    labels = label_function(target)
    old_labels = package_module_at_revision("advaudit.search.attacks", args.baseline).label_function(nchw)
    print(f"target {args.target}; {len(split.x)} test items; {args.threads} torch thread(s)")

    if "ceiling" not in skip:
        print("\n| forward pass | images/s |\n|---|---|")
        for name, rate in ceiling(nchw, target, old_labels, split.x).items():
            print(f"| {name} | {rate:,.0f} |", flush=True)

    if "compare" not in skip:
        print("\n" + query_comparison(old_labels, labels, x[: args.compare_items], split.x, box,
                                       parse_settings(args.full_settings.split(";")[0])), flush=True)

    if "full" not in skip:
        for spec in args.full_settings.split(";"):
            full = parse_settings(spec)
            _, seconds, queries = attack(x, split.x, labels, box, **full)
            print(f"\nfull pool: {len(x)} items, {full}: {seconds:.1f} s ({queries:.0f} queries/item, "
                  f"{queries * len(x) / seconds:,.0f} forward passes/s)", flush=True)

    if "quality" not in skip:
        probs = target.predict_proba(split.x)
        confidence, predicted = probs.max(1)
        index = eligible(predicted, confidence, args.critical_class, args.tau).nonzero().squeeze(1)
        index = index[: max(args.quality_items, 1)]
        items, conf, is_error = split.x[index], confidence[index], split.y[index] != args.critical_class
        print(f"\nquality: {len(index)} eligible items (predicted class {args.critical_class}, confidence > "
              f"{args.tau}), {int(is_error.sum())} errors among them", flush=True)
        cache = Path(args.reference_cache) if args.reference_cache else None
        key = [args.target, index.tolist(), args.reference_steps]
        saved = torch.load(cache, weights_only=True) if cache and cache.exists() else None
        if saved is not None and saved["key"] == key:
            reference, half, q_ref = saved["reference"], saved["half"], saved["queries"]
            print(f"reference distances loaded from {cache}")
        else:
            start = time.perf_counter()
            reference, _, q_ref = attack(items, split.x, labels, box, steps=args.reference_steps, binary_steps=12,
                                         direction_fn=margin_direction(target))
            print(f"reference (HSJ with the exact boundary normal, {args.reference_steps} steps, 12 bisections): "
                  f"{time.perf_counter() - start:.1f} s, {q_ref:.0f} forward queries/item", flush=True)
            half, _, _ = attack(items, split.x, labels, box, steps=args.reference_steps // 2, binary_steps=12,
                                direction_fn=margin_direction(target))
            if cache:
                torch.save({"key": key, "reference": reference, "half": half, "queries": q_ref}, cache)
        pools = draw_pools(len(index), min(args.pool_size, len(index)), args.replications,
                           torch.Generator().manual_seed(0))
        ks = (5, 10, 20)
        print("\n| distances | queries/item | seconds | median MAE / reference | Spearman rho vs reference | "
              + " | ".join(f"SDR@{k}" for k in ks) + " |")
        print("|---|---|---|---|---|" + "---|" * len(ks))

        def row(name: str, d: torch.Tensor, queries: float | str, seconds: float | str) -> None:
            rho = spearmanr(d.numpy(), reference.numpy()).statistic
            sdr = sdr_at(d, conf, is_error, pools, ks)
            ratio = float((d / reference).median())
            print(f"| {name} | {queries} | {seconds} | {ratio:.2f} | {rho:.3f} | "
                  + " | ".join(f"{sdr[k]:.3f}" for k in ks) + " |", flush=True)

        row(f"reference ({args.reference_steps} exact-normal steps)", reference, f"{q_ref:.0f}", "-")
        row(f"reference at {args.reference_steps // 2} steps (convergence check)", half, "-", "-")
        for spec in args.settings.split(";"):
            settings = parse_settings(spec)
            d, seconds, queries = attack(items, split.x, labels, box, **settings)
            row(f"HSJ {spec}", d, f"{queries:.0f}", f"{seconds:.1f}")
        rng = np.random.default_rng(0)
        row("random ranking (SDR only)", torch.from_numpy(rng.random(len(index))), "-", "-")
        low_conf = sdr_curve(is_error[pools.gather(1, conf[pools].argsort(1))],
                             conf[pools.gather(1, conf[pools].argsort(1))])
        print("low-confidence ranking: " + ", ".join(f"SDR@{k} {float(low_conf[:, k - 1].mean()):.3f}" for k in ks))


if __name__ == "__main__":
    main()
