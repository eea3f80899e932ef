"""Examiner throughput on ShapeWorld: queries/s and the examiner's own time as a share of
render + forward, per examiner, for N instances x budget queries.

    .venv/bin/python benchmarks/examiner_speed.py --target <shapes target.pt> \
        [--examiners random,rl,bo,tpe] [--instances 55] [--budget 500] [--threads 2]
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from advaudit.audits.worst_case import ConditionSpace
from advaudit.examiners import build_examiner
from advaudit.models import load_target
from advaudit.runtime import configure_threads
from advaudit.worlds.shapes import ShapeWorld

DEFAULTS = {"random": {"q": 32}, "rl": {"q": 32}, "bo": {"q": 1}, "tpe": {"q": 1}, "cmaes": {"q": 1}}


def examine_timed(name: str, world: ShapeWorld, target, n: int, budget: int, seed: int) -> dict[str, float]:
    z = world.instances("test")
    z = z.subset(torch.randperm(len(z), generator=torch.Generator().manual_seed(seed))[:n])
    space = ConditionSpace(list(world.factors), ["sun_rot_x", "sun_rot_y", "sun_rot_z"], n,
                           torch.Generator().manual_seed(seed))
    examiner = build_examiner({"name": name, **DEFAULTS[name]}, n, len(space.free), seed=seed)
    labels = z.labels
    t_examiner = t_model = 0.0
    for _ in range(math.ceil(budget / examiner.q)):
        start = time.perf_counter()
        u = examiner.ask()
        t_examiner += time.perf_counter() - start
        start = time.perf_counter()
        x = world.render(z, space.assemble(u))
        p = target.predict_proba(x, calibrated=False)
        true_prob = p.gather(1, labels.repeat_interleave(examiner.q).view(-1, 1)).view(n, -1)
        t_model += time.perf_counter() - start
        start = time.perf_counter()
        examiner.tell(u, 1 - true_prob)
        t_examiner += time.perf_counter() - start
    queries = examiner.Y.shape[1] * n
    return {"queries": queries, "seconds": t_examiner + t_model, "examiner_s": t_examiner, "model_s": t_model,
            "best": float(1 - examiner.Y.max(1).values.mean())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--examiners", default="random,rl,bo,tpe")
    parser.add_argument("--instances", type=int, default=55)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    threads = configure_threads(args.threads)
    target = load_target(args.target)
    world = ShapeWorld(image_size=target.input_shape[-1])
    print(f"N={args.instances}, budget={args.budget} queries/instance, {threads} torch threads")
    print("| examiner | queries/s | total s | render+forward s | examiner s | examiner / (render+forward) | E (mean best true prob) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.examiners.split(","):
        r = examine_timed(name, world, target, args.instances, args.budget, args.seed)
        print(f"| {name} | {r['queries'] / r['seconds']:,.0f} | {r['seconds']:.1f} | {r['model_s']:.1f} | "
              f"{r['examiner_s']:.1f} | {100 * r['examiner_s'] / r['model_s']:.1f}% | {r['best']:.4f} |", flush=True)


if __name__ == "__main__":
    main()
