"""Queries/s of the worst-case audit's loop without the reference judge, judging every query (eager) and
judging lazily (the default), interleaved step by step in one process so that the load of other jobs
falls on all three alike.

    python benchmarks/worst_case/judge_speed.py target=<target.pt> examiner=rl audit.n_instances=40 [overrides ...]

Each mode has its own examiner (same seed) and its own records file; every step, the three run one
iteration each, in an order that rotates, and the seconds of ``examine_step`` plus the record append
are summed per mode. Prints queries/s per mode, the ratios to no judge, and the share of queries the
lazy judge saw; checks that lazy and eager records agree wherever the lazy judge gave a verdict.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from advaudit.audits.lazy_validity import LazyJudging
from advaudit.audits.worst_case import budget_in_queries, examine_step, prepare
from advaudit.audits.settings import Mode
from advaudit.core.records import append_jsonl
from advaudit.examiners import build_examiner
from advaudit.runtime import configure_threads
from advaudit.worlds.protocol import periodic_mask
from advaudit.worlds.validity import ValidityJudge

MODES = ("none", "eager", "lazy")


def main(overrides: list[str]) -> None:
    from hydra import compose, initialize_config_dir

    configure_threads(1)
    out = Path(tempfile.mkdtemp(prefix="judge_speed_"))
    with initialize_config_dir(str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        cfg = compose("examine", ["audit=worst_case", "logger=none", f"paths.output_dir={out}", *overrides])
    ex = prepare(cfg)
    require_judge = ex.judge.reference is not None
    assert require_judge, "the world has no reference judge: nothing to measure"
    bare = replace(ex, judge=ValidityJudge(ex.world, replace(ex.audit.validity, reference=None)))
    seed = int(cfg.seed)
    examiners = {m: build_examiner(cfg.examiner, len(ex.z), len(ex.space.free), seed=seed,
                                   periodic=periodic_mask(ex.space.free_factors)) for m in MODES}
    q = examiners["none"].q
    budget, _ = budget_in_queries(ex.audit, q)
    steps = math.ceil(budget / q)
    lazy = LazyJudging(ex.z.ids, ex.audit.mode == Mode.strength, seed, ex.audit.validity.share_sample)
    seconds = {m: 0.0 for m in MODES}
    records = {m: [] for m in MODES}
    for step in range(steps):
        take = min(q, budget - step * q)
        for k in range(len(MODES)):
            mode = MODES[(step + k) % len(MODES)]
            start = time.perf_counter()
            rows = examine_step(bare if mode == "none" else ex, examiners[mode], step, take,
                                lazy if mode == "lazy" else None, step + 1 == steps)
            append_jsonl(out / f"{mode}.jsonl", rows)
            seconds[mode] += time.perf_counter() - start
            records[mode] += rows
    queries = budget * len(ex.z)
    rate = {m: queries / seconds[m] for m in MODES}
    judged = sum(v is not None for r in records["lazy"] for v in r["checks"]["reference"])
    agree = all(lv is None or lv == ev for lr, er in zip(records["lazy"], records["eager"])
                for lv, ev in zip(lr["valid"], er["valid"]))
    same_losses = all(lr["true_prob"] == er["true_prob"] for lr, er in zip(records["lazy"], records["eager"]))
    print(f"{cfg.examiner.name}: {len(ex.z)} instances x {budget} queries, {torch.get_num_threads()} thread(s)")
    for m in MODES:
        print(f"  {m:5s} {rate[m]:8.1f} queries/s  ({seconds[m]:.1f} s)  {rate[m] / rate['none']:.3f}x no judge")
    print(f"  lazy / eager {rate['lazy'] / rate['eager']:.2f}x; the lazy judge saw {judged} of {queries} queries "
          f"({100 * judged / queries:.1f}%); verdicts agree: {agree}; same losses: {same_losses}")


if __name__ == "__main__":
    main(sys.argv[1:])
