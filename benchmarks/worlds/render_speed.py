"""Render throughput of the worlds (renders/s), median of repeats.

``--baseline REV`` also times ShapeWorld as it was at git revision ``REV`` (``advaudit/worlds/shapes/``:
the world and its renderer), interleaved repeat by repeat with the current one on the same scenes in the
same process (so both see the same machine load), and prints the ratio. ``--masks`` times images and
object masks from one pass (``render_with_masks``, what an examination's geometric checks use).

    .venv/bin/python benchmarks/worlds/render_speed.py [--threads 2] [--batch 2000] [--device cpu] [--baseline main]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import torch

from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.runtime import configure_threads
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.transforms import TransformWorld
import sys
from pathlib import Path
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from revision import package_module_at_revision  # benchmarks/ is on sys.path


def timed_render(world, batch: int, device: str, masks: bool = False, scenes_of: Any = None,
                 spread: bool = False, instances: int = 0) -> Callable[[], float]:
    """A function that renders ``batch`` random scenes and returns the seconds it took (the scenes of the
    world ``scenes_of`` where given, so that two worlds draw the same ones). The scenes' instances are the
    test split's first ``batch`` (the first class's); with ``spread`` ``batch`` instances spaced evenly over
    the whole split (every class in turn); with ``instances`` = K, as an examination's step: K instances
    under ``batch / K`` conditions each, and each timing renders five such batches (different instances,
    every class once when K = 2)."""
    source = scenes_of or world
    z = source.instances("test")
    if instances:
        per = batch // instances
        step = len(z) // (5 * instances)
        picks = [torch.arange(i * step, len(z), 5 * step)[:instances].repeat_interleave(per) for i in range(5)]
    else:
        step = max(1, len(z) // batch) if spread else 1
        picks = [torch.arange(0, batch * step, step) % len(z)]
    zs = [z.subset(p.to(z.labels.device)) for p in picks]
    s = source.random_conditions(len(picks[0]) * len(picks), 1, torch.Generator().manual_seed(0)).to(device)
    ss = s.split(len(picks[0]))
    draw = world.render_with_masks if masks else world.render
    draw(zs[0], ss[0])  # warm-up

    def once() -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for zz, part in zip(zs, ss):
            draw(zz, part)
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - start) / len(zs)

    return once


def interleaved_rates(runs: dict[str, Callable[[], float]], batch: int, repeats: int) -> dict[str, float]:
    """Renders/s per run (median of ``repeats``), the runs alternating within each repeat."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, once in runs.items():
            times[name].append(once())
    return {name: batch / statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--baseline", default=None, help="git revision of ShapeWorld to time as well (same run)")
    parser.add_argument("--masks", action="store_true", help="time images and masks from one pass")
    parser.add_argument("--sizes", default="32,64")
    parser.add_argument("--instances", type=int, default=0,
                        help="as an examination's step: this many instances x batch/instances conditions each")
    parser.add_argument("--spread", action="store_true",
                        help="instances spread over the test split (all classes), not its first (one class)")
    args = parser.parse_args()
    threads = configure_threads(args.threads)
    baseline = (package_module_at_revision("advaudit.worlds.shapes.world", args.baseline).ShapeWorld
                if args.baseline else None)
    head = f"renders/s (batch {args.batch}, {threads} threads, {args.device})"
    print(f"| world | size | shadows | {head} |" + (f" {args.baseline} | speed-up |" if baseline else ""))
    print("|---|---|---|---|" + ("---|---|" if baseline else ""))
    for size in (int(x) for x in args.sizes.split(",")):
        for shadows in (True, False):
            world = ShapeWorld(image_size=size, shadows=shadows, device=args.device)
            runs = {"current": timed_render(world, args.batch, args.device, args.masks, spread=args.spread,
                                            instances=args.instances)}
            if baseline:
                old = baseline(image_size=size, shadows=shadows, device=args.device)
                runs["baseline"] = timed_render(old, args.batch, args.device, args.masks, scenes_of=world,
                                               spread=args.spread, instances=args.instances)
            rates = interleaved_rates(runs, args.batch, args.repeats)
            line = f"| ShapeWorld | {size} | {shadows} | {rates['current']:,.0f} |"
            if baseline:
                line += f" {rates['baseline']:,.0f} | {rates['current'] / rates['baseline']:.2f}x |"
            print(line, flush=True)
    world = TransformWorld(FashionMNISTDataModule(limit={"train": 100}), device=args.device)
    rate = interleaved_rates({"t": timed_render(world, args.batch, args.device)}, args.batch, args.repeats)["t"]
    print(f"| TransformWorld (Fashion-MNIST) | 28 | - | {rate:,.0f} |")


if __name__ == "__main__":
    main()
