"""Render throughput of the worlds (renders/s), median of repeats.

    .venv/bin/python benchmarks/render_speed.py [--threads 2] [--batch 2000] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.runtime import configure_threads
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.transforms import TransformWorld


def renders_per_second(world, batch: int, repeats: int, device: str) -> float:
    z = world.instances("test")
    z = z.subset(torch.arange(batch, device=z.labels.device) % len(z))
    s = world.random_conditions(batch, 1, torch.Generator().manual_seed(0)).to(device)
    world.render(z, s)  # warm-up
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        world.render(z, s)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return batch / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    threads = configure_threads(args.threads)
    print(f"| world | size | shadows | renders/s (batch {args.batch}, {threads} threads, {args.device}) |")
    print("|---|---|---|---|")
    for size in (32, 64):
        for shadows in (True, False):
            world = ShapeWorld(image_size=size, shadows=shadows, device=args.device)
            rate = renders_per_second(world, args.batch, args.repeats, args.device)
            print(f"| ShapeWorld | {size} | {shadows} | {rate:,.0f} |", flush=True)
    world = TransformWorld(FashionMNISTDataModule(limit={"train": 100}), device=args.device)
    print(f"| TransformWorld (Fashion-MNIST) | 28 | - | {renders_per_second(world, args.batch, args.repeats, args.device):,.0f} |")


if __name__ == "__main__":
    main()
