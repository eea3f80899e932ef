"""Train a TransformWorld reference judge (advaudit.worlds.transform_judge), by default on Fashion-MNIST.

A ResNet-18 (width 16) trained on fresh random views of the world's box (the transforms as augmentation),
temperature fitted on validation views of the box; writes an advaudit target.pt. Two seeds give the
packaged judge (seed 0) and an independent judge to measure it with (seed 1):

    OMP_NUM_THREADS=1 nice -n 10 PYTHONPATH=. .venv/bin/python benchmarks/worst_case/transform_judge.py \\
        --out outputs/tjudge/s0.pt --seed 0 --epochs 1.5 [--factors '{blur:[0,0.5]}']

Your own dataset: ``--dataset`` takes a dataset config as YAML (any ``conf/dataset`` ``_target_``), e.g.
``--dataset '{_target_: advaudit.data.folders.ImageFolderDataModule, root: /data/parts, image_size: 32}'``;
put the judge in the check with ``examine.py ... audit.validity.reference=<out>``.
"""

from __future__ import annotations

import argparse
import json
import logging

import torch
import yaml
from hydra.utils import instantiate

from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.worlds.transform_judge import train_transform_judge
from advaudit.worlds.transforms import TransformWorld


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--arch", default=None, help="a dotted path (default: the packaged judge's ResNet-18)")
    parser.add_argument("--arch-params", default=None, help="its keyword arguments as YAML, default '{width: 16}'")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--minutes", type=float, default=None,
                        help="a wall-clock budget: the schedule runs on the clock, stops at --minutes or --epochs")
    parser.add_argument("--dataset", default=None, help="a dataset config as YAML with _target_ (default: Fashion-MNIST)")
    parser.add_argument("--factors", default=None, help="world.factors overrides as YAML, e.g. '{blur:[0,0.5]}'")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    dataset = instantiate(yaml.safe_load(args.dataset)) if args.dataset else FashionMNISTDataModule(seed=0)
    world = TransformWorld(dataset, factors=yaml.safe_load(args.factors) if args.factors else None)
    arch = {"arch": args.arch} if args.arch else {}
    params = yaml.safe_load(args.arch_params) if args.arch_params else None
    metrics = train_transform_judge(world, args.out, seed=args.seed, epochs=args.epochs, arch_params=params,
                                    batch_size=args.batch_size, lr=args.lr,
                                    budget_s=None if args.minutes is None else 60 * args.minutes, **arch)
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
