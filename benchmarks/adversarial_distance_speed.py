"""How fast, and how good, are the decision-based attacks behind adversarial distance?

1. Ceiling: raw batched forward throughput of the target CNN (images/s) at several batch sizes,
   ``no_grad`` vs ``inference_mode`` vs channels-last, interleaved so machine load hits all alike.
2. Old vs new in the same run: ``batched_hop_skip_jump`` at git revision ``--baseline`` and now, on
   the same items and settings (queries per item, seconds, whether the distances are identical).
3. The full pool (``--items``, default 2,000) with the default settings: wall time, queries per
   item, forward passes/s.
4. Ranking quality on >= ``--quality-items`` eligible items (predicted as the critical class with
   calibrated confidence > tau): distances of each attack setting against a converged reference
   (HSJ driven by the exact boundary normal, ``--reference-steps`` iterations: HSJ's limit of
   infinitely many probes); Spearman rho of the distances and SDR@k of the adversarial-distance
   ranking (LOWESS of log-MAE on confidence) over pools drawn from the eligible items, with the
   random ranking and the low-confidence ranking for scale.

    .venv/bin/python benchmarks/adversarial_distance_speed.py <target.pt> [--items 2000] [--quality-items 500]
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
from advaudit.search.adversarial_distance import LowessSettings, distance_values, pool_scores
from advaudit.search.attacks import (attack_box, batched_hop_skip_jump, label_function, mae, margin_direction,
                                     nearest_differently_labelled)
from advaudit.search.metrics import sdr_curve
from advaudit.search.pools import draw_pools, eligible
from revision import module_at_revision  # benchmarks/ is on sys.path

HSJ_KEYS = ("steps", "gradient_queries", "max_gradient_queries", "binary_steps", "probe_resolution")


def default_settings() -> dict:
    """The audit's HSJ settings, read from ``conf/search/methods.yaml`` so the benchmark times the default."""
    from omegaconf import OmegaConf

    attack = OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "search" / "methods.yaml")
    return {k: attack.adversarial_distance.attack.get(k) for k in HSJ_KEYS}


def parse_settings(spec: str) -> dict:
    """``k=v,...`` overrides of the default settings (``v`` an integer or ``none``)."""
    settings = default_settings()
    for key, value in (kv.split("=") for kv in spec.split(",") if kv):
        settings[key] = None if value.lower() in ("none", "null") else int(value)
    return settings


DEFAULT = default_settings()


def ceiling(target, x: torch.Tensor, repeats: int = 2, n: int = 2048) -> dict[str, float]:
    """Images/s of the target's forward pass for each (mode, batch size), best of ``repeats`` interleaved."""
    cases = {}
    for batch in (256, 2048):
        cases[f"no_grad, batch {batch}"] = (torch.no_grad, batch, False)
        cases[f"inference_mode, batch {batch}"] = (torch.inference_mode, batch, False)
    cases["inference_mode, channels-last, batch 256"] = (torch.inference_mode, 256, True)
    times: dict[str, list[float]] = {k: [] for k in cases}
    n = min(len(x), n)
    for _ in range(repeats):
        for name, (mode, batch, channels_last) in cases.items():
            xx = x[:n].contiguous(memory_format=torch.channels_last) if channels_last else x[:n]
            net = target.to(memory_format=torch.channels_last) if channels_last else target
            start = time.perf_counter()
            with mode():
                for i in range(0, n, batch):
                    net(xx[i:i + batch])
            times[name].append(time.perf_counter() - start)
            target.to(memory_format=torch.contiguous_format)
    return {k: n / min(v) for k, v in times.items()}


def attack(x: torch.Tensor, pool: torch.Tensor, labels, box, module=None, **settings) -> tuple[torch.Tensor, float, float]:
    """MAE per item (box units), seconds, queries per item; ``module``: another revision's attacks.py."""
    hsj = module.batched_hop_skip_jump if module is not None else batched_hop_skip_jump
    start = time.perf_counter()
    starts = nearest_differently_labelled(x, labels(x), pool, labels(pool))
    result = hsj(x, labels, starts, bounds=box, **settings)
    return mae(x, result.adversarial), time.perf_counter() - start, result.queries / len(x)


def sdr_at(distance: torch.Tensor, confidence: torch.Tensor, is_error: torch.Tensor, pools: torch.Tensor,
           ks: tuple[int, ...]) -> dict[int, float]:
    """Mean SDR@k of the adversarial-distance ranking (lowest first) over ``pools`` ``[R, P]``."""
    scores = pool_scores(distance_values(distance, True), confidence, pools, LowessSettings())
    order = scores.argsort(1)
    picked = pools.gather(1, order)
    curve = sdr_curve(is_error[picked], confidence[picked])
    return {k: float(curve[:, k - 1].mean()) for k in ks}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--items", type=int, default=2000, help="pool attacked with the default settings")
    parser.add_argument("--compare-items", type=int, default=300, help="items for the same-run comparison with --baseline")
    parser.add_argument("--baseline", default="main", help="git revision of attacks.py for the comparison")
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
    parser.add_argument("--full-settings", default="", help="k=v,... overrides of the default for the full pool")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    skip = set(args.skip.split(","))
    target = load_target(args.target).eval()
    split = target_datamodule(target).splits["test"]
    x = split.x[: args.items]
    box = attack_box(split.x)
    labels = label_function(target)
    print(f"target {args.target}; {len(split.x)} test items; {args.threads} torch thread(s)")

    if "ceiling" not in skip:
        print("\n| forward pass | images/s |\n|---|---|")
        for name, rate in ceiling(target, split.x).items():
            print(f"| {name} | {rate:,.0f} |", flush=True)

    if "compare" not in skip:
        baseline = module_at_revision("advaudit/search/attacks.py", args.baseline)
        part = x[: args.compare_items]
        settings = parse_settings(args.full_settings)
        if settings.get("probe_resolution") is None:
            settings.pop("probe_resolution")  # older revisions do not know it
        rows = {}
        for name, module in ((f"{args.baseline}", baseline), ("current", None)):
            rows[name] = attack(part, split.x, labels, box, module=module, **settings)
        (d_old, s_old, q_old), (d_new, s_new, q_new) = rows.values()
        print(f"\nsame run, {len(part)} items, {settings}: {args.baseline} {s_old:.1f} s ({q_old:.0f} queries/item), "
              f"current {s_new:.1f} s ({q_new:.0f} queries/item), speed-up {s_old / s_new:.2f}x; "
              f"identical distances: {torch.equal(d_old, d_new)}", flush=True)

    if "full" not in skip:
        full = parse_settings(args.full_settings)
        d_full, seconds, queries = attack(x, split.x, labels, box, **full)
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
