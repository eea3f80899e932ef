"""A user's own recipes, trained outside advaudit: one dense-head CNN on Fashion-MNIST with no augmentation, with
colour jitter (brightness, contrast and gamma together) or with random shifts and scaling, saved as plain
state_dicts with a target block each (what a user brings to advaudit).

    PYTHONPATH=. .venv/bin/python benchmarks/compare/user_recipes.py --out outputs/recipes --recipes plain jitter shift \
        --seeds 0 1 2 --epochs 3

writes ``<out>/<recipe>_s<seed>/{weights.pt, accuracy.json}`` and each file's target block as an experiment file
``<out>/conf/experiment/<recipe>_s<seed>.yaml`` whose ``name`` is the recipe, so that
``examine.py --config-dir <out>/conf -m experiment=plain_s0,plain_s1,jitter_s0,jitter_s1 world=transforms seed=0``
examines every file on the same instances and ``python -m advaudit.compare`` compares the recipes over their files.
Resumable: a file already trained is skipped.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

from benchmarks.compare.user_files import fashion_mnist, fit, save_user_file
from tests.models.user_models import DenseHeadCNN


def uniform(n: int, low: float, high: float) -> torch.Tensor:
    return low + torch.rand(n) * (high - low)


def colour_jitter(batch: torch.Tensor) -> torch.Tensor:
    """Each image of ``batch`` ``[B, 1, H, W]`` with its own brightness offset in [-0.25, 0.25], contrast in
    [0.6, 1.4] (about its mean) and gamma in [0.7, 1.5], clipped to [0, 1]."""
    n = len(batch)
    x = (batch + uniform(n, -0.25, 0.25)[:, None, None, None]).clamp(0, 1)
    mean = x.mean((1, 2, 3), keepdim=True)
    x = ((x - mean) * uniform(n, 0.6, 1.4)[:, None, None, None] + mean).clamp(0, 1)
    return x.clamp_min(1e-6).pow(uniform(n, 0.7, 1.5)[:, None, None, None])


def shift_scale(batch: torch.Tensor) -> torch.Tensor:
    """Each image of ``batch`` ``[B, 1, H, W]`` moved by up to 10% of its side in x and y and scaled by 0.85-1.15
    about its centre (zeros outside), as ``RandomAffine(0, translate=(0.1, 0.1), scale=(0.85, 1.15))`` would."""
    n = len(batch)
    scale = uniform(n, 0.85, 1.15)
    shift = torch.stack([uniform(n, -0.1, 0.1), uniform(n, -0.1, 0.1)], 1) * 2
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = 1 / scale
    theta[:, :, 2] = -shift / scale[:, None]
    grid = F.affine_grid(theta, list(batch.shape), align_corners=False)
    return F.grid_sample(batch, grid, align_corners=False)


AUGMENT: dict[str, Callable[[torch.Tensor], torch.Tensor] | None] = {
    "plain": None, "jitter": colour_jitter, "shift": shift_scale}


def train_one(recipe: str, seed: int, epochs: int, width: int) -> DenseHeadCNN:
    """Plain PyTorch: Adam (lr 1e-3), batch 128, ``epochs`` passes; the recipe's augmentation drawn per image."""
    torch.manual_seed(seed)
    x, y = fashion_mnist("train")
    model = DenseHeadCNN(classes=10, width=width)
    return fit(model, x, y, AUGMENT[recipe], epochs, lr=1e-3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--recipes", nargs="+", default=list(AUGMENT), choices=list(AUGMENT))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    test = fashion_mnist("test")
    for seed in args.seeds:
        for recipe in args.recipes:
            if (args.out / f"{recipe}_s{seed}" / "accuracy.json").exists():
                continue
            started = time.perf_counter()
            model = train_one(recipe, seed, args.epochs, args.width)
            save_user_file(model, args.out, recipe, seed, args.width, test,
                           {"recipe": recipe, "epochs": args.epochs}, started)


if __name__ == "__main__":
    main()
