"""Verify an injected spurious-feature fault on two held-out sets: the clean test split and the same
split with the feature imprinted on every image. Prints per-class accuracy and how often each class
is predicted as the feature's class.

    .venv/bin/python benchmarks/verify_injected_fault.py <target.pt> --kind patch --feature-class coat
"""

from __future__ import annotations

import argparse

import torch

from advaudit.audits.common import target_datamodule
from advaudit.data.base import class_index
from advaudit.data.bias import add_image_feature
from advaudit.models import load_target


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--kind", default="patch")
    parser.add_argument("--strength", type=float, default=1.0)
    parser.add_argument("--feature-class", default="coat")
    args = parser.parse_args()
    target = load_target(args.target)
    split = target_datamodule(target).splits["test"]
    c = class_index(args.feature_class, target.class_names)
    clean = target.predict_proba(split.x).argmax(1)
    marked = target.predict_proba(add_image_feature(split.x, args.kind, args.strength)).argmax(1)
    print(f"{'class':>12} {'acc clean':>10} {'acc with feature':>17} {'-> ' + target.class_names[c] + ' with feature':>24}")
    for k, name in enumerate(target.class_names):
        m = split.y == k
        print(f"{name:>12} {float((clean[m] == k).float().mean()):10.3f} {float((marked[m] == k).float().mean()):17.3f} "
              f"{float((marked[m] == c).float().mean()):24.3f}")


if __name__ == "__main__":
    main()
