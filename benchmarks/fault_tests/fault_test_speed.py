"""Fault-test throughput: the generator walk before and after batching and folding, in one run.

``before`` is :func:`advaudit.faults.search.generator_tests` as it was at git revision ``--baseline``
(default ea46cc3, before the walk was batched and folded), imported from that revision's package
checked out of git (``benchmarks/scale/revision.py``): one direction per call, the plain generator
(BatchNorm, nearest upsample then conv), the target's weights still collecting gradients. ``after``
is this checkout's :func:`advaudit.faults.search.generator_tests`: both directions in one batch, the
folded generator (:mod:`advaudit.models.generators.generator_folding`), the target frozen. Both walk the same
seeds with the same settings, so their quality must agree: the share of failing tests per direction, the confidence of
the failing tests (the target's softmax probability of the target class and the margin), and the
seed-by-seed agreement of success. Throughput = failing tests per second of walk.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fault_tests/fault_test_speed.py --generator G.pt --target T.pt \
        [--seeds 200] [--profile 20] [--scaling 50 200 800] [--baseline ea46cc3] [--out outputs/fault_speed]

``--profile N``: torch.profiler over N walk steps of 200 seeds, before and after (top operators).
``--caps-from DIR...``: success and seed-steps had ``max_steps`` been lower, read off finished audits.
``--scaling``: the after-walk's cost against the number of seeds per direction, one run, walked in the
audit's chunks (``--scaling-chunk``) and, for sizes above one chunk, also in one batch; the cost per
seed-step of each batch size, a linear fit ``seconds = fixed + per_seed_step * seed_steps`` (which term
dominates) and a PNG.
Results are appended to ``<out>/results.jsonl`` as they come.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from advaudit.core.plots import plt, save_figure
from advaudit.data.split import class_index
from advaudit.faults.search import FaultResult, generator_tests, margin_loss
from advaudit.faults.seeds import sample_seeds
from advaudit.models import load_target
from advaudit.models.generators.generator import load_generator
import sys
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from revision import package_module_at_revision  # benchmarks/ is on sys.path


def quality(model: torch.nn.Module, result: FaultResult, y0: Tensor, y1: Tensor, kappa: float) -> dict[str, Any]:
    """Share of failing tests, and for the failing ones the target-class probability and margin."""
    ok = result.success
    with torch.no_grad():
        logits = model(result.tests)
    prob = torch.softmax(logits, 1).gather(1, y1[:, None]).squeeze(1)
    margin = kappa - margin_loss(logits, y0, y1, kappa)  # f_{y1} - max_{y != y1} f_y
    return {"success": float(ok.float().mean()), "failing": int(ok.sum()),
            "target_prob_mean": float(prob[ok].mean()) if ok.any() else None,
            "margin_mean": float(margin[ok].mean()) if ok.any() else None,
            "steps_mean": float(result.steps[ok].float().mean()) if ok.any() else None,
            "seed_steps": int((result.steps + 1).sum())}


def draw_seeds(generator: torch.nn.Module, model: torch.nn.Module, classes: tuple[int, int], n: int,
               seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` seeds per direction: ``(z, y0, y1)`` for ``a -> b`` then ``b -> a``."""
    a, b = classes
    za, ya, _ = sample_seeds(generator, model, a, n, seed=seed)
    zb, yb, _ = sample_seeds(generator, model, b, n, seed=seed + 1)
    return torch.cat([za, zb]), torch.cat([ya, yb]), torch.cat([torch.full_like(ya, b), torch.full_like(yb, a)])


def compare(generator: torch.nn.Module, model: torch.nn.Module, z: Tensor, y0: Tensor, y1: Tensor,
            settings: dict[str, Any], before_walk: Callable[..., Any]) -> dict[str, Any]:
    """Before (``before_walk``, the old revision's walk: one call per direction, as the audit made them)
    and after (one batched call), same seeds."""
    n = len(z) // 2
    halves = (slice(0, n), slice(n, 2 * n))
    model.requires_grad_(True)  # as the audit loaded it before this change
    before = [before_walk(generator, model, z[s], y0[s], y1[s], **settings) for s in halves]
    after = generator_tests(generator, model, z, y0, y1, **settings)
    row: dict[str, Any] = {"seeds_per_direction": n, "settings": settings}
    for name, parts in (("before", before), ("after", [after.subset(s) for s in halves])):
        seconds = sum(p.seconds for p in before) if name == "before" else after.seconds
        per_direction = [quality(model, p, y0[s], y1[s], settings["kappa"]) for p, s in zip(parts, halves)]
        failing = sum(q["failing"] for q in per_direction)
        row[name] = {"seconds": seconds, "failing_tests_per_second": failing / seconds,
                     "directions": per_direction}
    same = torch.cat([b.success for b in before]) == after.success
    row["same_success_share"] = float(same.float().mean())
    both_ok = torch.cat([b.success for b in before]) & after.success
    diff = (torch.cat([b.tests for b in before]) - after.tests).flatten(1).abs().amax(1)
    row["max_abs_test_difference_where_both_fail"] = float(diff[both_ok].max()) if both_ok.any() else None
    row["speedup"] = row["before"]["seconds"] / row["after"]["seconds"]
    return row


def profile(generator: torch.nn.Module, model: torch.nn.Module, z: Tensor, y0: Tensor, y1: Tensor,
            steps: int, kappa: float, before_walk: Callable[..., Any]) -> dict[str, list[dict[str, Any]]]:
    """Top operators by self CPU time over ``steps`` walk steps (no seed finishes: eps is tiny), of the
    old revision's walk (``before_walk``) and this checkout's."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    tables: dict[str, list[dict[str, Any]]] = {}
    settings = {"k": 2, "eps": 1e-4, "kappa": kappa, "max_steps": steps}
    for name in ("before", "after"):
        model.requires_grad_(name == "before")
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            if name == "before":
                before_walk(generator, model, z, y0, y1, **settings)
            else:
                generator_tests(generator, model, z, y0, y1, **settings)
        events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
        total = sum(e.self_cpu_time_total for e in events)
        tables[name] = [{"op": e.key, "self_s": e.self_cpu_time_total / 1e6, "share": e.self_cpu_time_total / total,
                         "calls": e.count} for e in events[:8]]
        tables[name + "_total_s"] = total / 1e6  # type: ignore[assignment]
    model.requires_grad_(True)
    return tables


def scaling(generator: torch.nn.Module, model: torch.nn.Module, classes: tuple[int, int], sizes: list[int],
            settings: dict[str, Any], seed: int, out: Path, log: Any, chunk: int = 400) -> list[dict[str, Any]]:
    """The batched walk's seconds against seeds per direction, walked as the audit walks them (chunks of
    ``chunk`` seeds, ``audit.chunk``) and, where that is more than one chunk, also as one batch: the
    cost per seed-step of each batch size, and the fit ``seconds = fixed + per_seed_step * seed_steps``
    over the chunked walks (which term dominates), with a PNG of both."""
    rows = []
    for n in sizes:
        z, y0, y1 = draw_seeds(generator, model, classes, n, seed)
        batches = {"chunked": chunk} if len(z) <= chunk else {"chunked": chunk, "one_batch": len(z)}
        for mode, size in batches.items():
            parts = [generator_tests(generator, model, z[i:i + size], y0[i:i + size], y1[i:i + size], **settings)
                     for i in range(0, len(z), size)]
            result = FaultResult.concat(parts)
            q = quality(model, result, y0, y1, settings["kappa"])
            row = {"scaling_seeds_per_direction": n, "mode": mode, "batch": min(size, len(z)),
                   "seconds": result.seconds, "seed_steps": q["seed_steps"],
                   "ms_per_seed_step": 1e3 * result.seconds / q["seed_steps"], "failing": q["failing"],
                   "success": q["success"], "failing_tests_per_second": q["failing"] / result.seconds,
                   "load_average": os.getloadavg()[0]}
            log(row)
            rows.append(row)
    chunked = [r for r in rows if r["mode"] == "chunked"]
    x = np.array([r["seed_steps"] for r in chunked], dtype=float)
    t = np.array([r["seconds"] for r in chunked])
    per_step, fixed = np.polyfit(x, t, 1)
    fit = {"scaling_fit": {"fixed_seconds": float(fixed), "per_seed_step_ms": float(per_step * 1e3),
                           "share_per_seed_step_at_largest": float(per_step * x[-1] / t[-1]), "chunk": chunk}}
    log(fit)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    seeds = [r["scaling_seeds_per_direction"] for r in chunked]
    left.plot(seeds, t, "o-", label=f"chunks of {chunk} seeds (the audit)")
    left.plot(seeds, fixed + per_step * x, "--", label=f"fit: {fixed:.1f} s + {per_step * 1e3:.2f} ms x seed-steps")
    single = [r for r in rows if r["mode"] == "one_batch"]
    if single:
        left.plot([r["scaling_seeds_per_direction"] for r in single], [r["seconds"] for r in single], "s",
                  label="all seeds in one batch")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("seeds per direction (2 directions walked together)")
    left.set_ylabel("walk seconds")
    left.legend(fontsize=7)
    right.plot([r["batch"] for r in rows], [r["ms_per_seed_step"] for r in rows], "o")
    right.set_xscale("log")
    right.set_xlabel("seeds walked together (batch)")
    right.set_ylabel("ms per seed-step")
    right.set_ylim(bottom=0)
    save_figure(fig, out / "fault_test_scaling.png")
    return rows + [fit]


def step_caps(run_dirs: list[Path], caps: list[int]) -> list[dict[str, Any]]:
    """What a lower ``audit.max_steps`` would give, read off finished audits (no new search): a seed's
    walk does not depend on the cap, so with cap ``c`` exactly the seeds that failed by step ``c`` fail.
    Per cap: the share of seeds failing and the seed-steps walked, relative to the full run."""
    steps, success = [], []
    for run_dir in run_dirs:
        for chunk in sorted((run_dir / "units" / "generator").glob("*.pt")):
            saved = torch.load(chunk, weights_only=True, map_location="cpu")
            steps.append(saved["steps"])
            success.append(saved["success"])
    taken, ok = torch.cat(steps), torch.cat(success)
    full_cost = float((taken + 1).sum())
    rows = []
    for cap in caps:
        fails = ok & (taken <= cap)
        cost = float((taken.clamp(max=cap) + 1).sum())
        rows.append({"cap": cap, "seeds": len(ok), "success": float(fails.float().mean()),
                     "success_share_of_full": float(fails.sum()) / max(float(ok.sum()), 1.0),
                     "seed_steps_share_of_full": cost / full_cost,
                     "failing_per_seed_step_gain": (float(fails.sum()) / cost) / (float(ok.sum()) / full_cost)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generator", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--classes", nargs=2, default=["pullover", "coat"])
    parser.add_argument("--seeds", type=int, default=200, help="seeds per direction (0: skip the comparison)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eps", type=float, default=4.0)
    parser.add_argument("--max-steps", type=int, default=400)
    parser.add_argument("--profile", type=int, default=0, help="walk steps to profile (0: no profile)")
    parser.add_argument("--scaling", type=int, nargs="*", default=[])
    parser.add_argument("--scaling-max-steps", type=int, default=None, help="step cap of the scaling runs "
                        "(default: --max-steps); the cost per seed-step does not depend on it")
    parser.add_argument("--scaling-chunk", type=int, default=400, help="seeds walked together in the scaling "
                        "runs, as audit.chunk (default 400, the audit's); larger sizes are also walked in one batch")
    parser.add_argument("--caps-from", type=Path, nargs="*", default=[],
                        help="finished fault-test run dirs: success and cost had max_steps been lower")
    parser.add_argument("--caps", type=int, nargs="*", default=[10, 25, 50, 100, 200, 400])
    parser.add_argument("--baseline", default="ea46cc3", help="git revision whose generator walk is 'before'")
    parser.add_argument("--out", type=Path, default=Path("outputs/fault_speed"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"

    def log(row: dict[str, Any]) -> None:
        print(json.dumps(row), flush=True)
        with results.open("a") as f:
            f.write(json.dumps({"target": args.target, **row}) + "\n")

    if args.caps_from:
        for row in step_caps(args.caps_from, args.caps):
            log({"caps_from": [str(p) for p in args.caps_from], **row})
    model = load_target(args.target).eval()
    generator, meta = load_generator(args.generator)
    generator.requires_grad_(False)
    classes = (class_index(args.classes[0], model.class_names), class_index(args.classes[1], model.class_names))
    settings = {"k": 2, "eps": args.eps, "kappa": 1.0, "lr": 0.003, "max_steps": args.max_steps}
    before_walk = package_module_at_revision("advaudit.faults.search", args.baseline).generator_tests
    if args.profile:
        z, y0, y1 = draw_seeds(generator, model, classes, 100, args.seed)
        log({"profile_steps": args.profile, "seeds": len(z),
             **profile(generator, model, z, y0, y1, args.profile, settings["kappa"], before_walk)})
    if args.seeds:
        z, y0, y1 = draw_seeds(generator, model, classes, args.seeds, args.seed)
        log(compare(generator, model, z, y0, y1, settings, before_walk))
    if args.scaling:
        capped = {**settings, "max_steps": args.scaling_max_steps or args.max_steps}
        scaling(generator, model, classes, args.scaling, capped, args.seed, args.out, log, args.scaling_chunk)


if __name__ == "__main__":
    main()
