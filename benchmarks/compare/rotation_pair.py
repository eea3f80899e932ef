"""A user's own recipe, trained outside advaudit: the same small CNN on Fashion-MNIST with and without random
rotations in [-30, 30] degrees, saved as plain state_dicts with a target block each (what a user brings).

    PYTHONPATH=. .venv/bin/python benchmarks/compare/rotation_pair.py --out outputs/rotation_pair --seeds 0 1 2 --epochs 3

writes ``<out>/<plain|rot>_s<seed>/{weights.pt, accuracy.json}`` and the target block of each as an experiment
file ``<out>/conf/experiment/<plain|rot>_s<seed>.yaml``, so that
``examine.py --config-dir <out>/conf -m experiment=plain_s0,rot_s0 world=transforms examiner=rl`` audits both.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks.compare.user_files import fashion_mnist, fit, save_user_file
from tests.models.user_models import SmallNet


def rotate(batch: torch.Tensor, degrees: float = 30.0) -> torch.Tensor:
    """Each image of ``batch`` ``[B, 1, H, W]`` turned by its own angle, uniform in [-degrees, degrees] (zeros outside)."""
    angle = (torch.rand(len(batch)) * 2 - 1) * degrees * torch.pi / 180
    cos, sin, zero = angle.cos(), angle.sin(), torch.zeros(len(batch))
    theta = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
    grid = F.affine_grid(theta, list(batch.shape), align_corners=False)
    return F.grid_sample(batch, grid, align_corners=False)


def train_one(augment: bool, seed: int, epochs: int, width: int) -> SmallNet:
    """Plain PyTorch: Adam, batch 128, ``epochs`` passes; rotations drawn per image when ``augment``."""
    torch.manual_seed(seed)
    x, y = fashion_mnist("train")
    model = SmallNet(classes=10, width=width)
    return fit(model, x, y, rotate if augment else None, epochs, lr=2e-3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    test = fashion_mnist("test")
    for seed in args.seeds:
        for name, augment in (("plain", False), ("rot", True)):
            if (args.out / f"{name}_s{seed}" / "accuracy.json").exists():
                continue
            started = time.perf_counter()
            model = train_one(augment, seed, args.epochs, args.width)
            save_user_file(model, args.out, name, seed, args.width, test,
                           {"rotated": augment, "epochs": args.epochs}, started)


if __name__ == "__main__":
    main()
