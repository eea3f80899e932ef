"""Verify an injected fault on two held-out sets, as the generative-fault-tests paper does.

Global feature faults (``--attribute brightness|size --threshold t --high-class c``): the target was
trained only on class-``c`` items with the attribute >= t and other-class items below t. Held-out
set A is the test items biased the same way (high performance expected), set B the items biased the
opposite way (low performance expected). Prints each set's accuracy per class.

Spurious-patch faults (``--kind patch --feature-class coat``): the clean test split and the same
split with the feature imprinted on every image.

    .venv/bin/python benchmarks/fault_tests/verify_injected_fault.py <target.pt> --attribute brightness --threshold 0.40 --high-class pullover
    .venv/bin/python benchmarks/fault_tests/verify_injected_fault.py <target.pt> --kind patch --feature-class coat
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's advaudit, not an installed one

from advaudit.audits.common import target_datamodule  # noqa: E402
from advaudit.data.bias import add_image_feature, image_statistic  # noqa: E402
from advaudit.data.split import class_index  # noqa: E402
from advaudit.models import load_target  # noqa: E402


def held_out_by_attribute(target, split, attribute: str, threshold: float, high_class: int) -> dict:
    """Accuracy per class on set A (biased like training) and set B (biased the opposite way)."""
    value = image_statistic(split.x, attribute)
    predicted = target.predict_proba(split.x).argmax(1)
    like_training = (split.y == high_class) == (value >= threshold)
    report = {}
    for name, members in (("A_like_training", like_training), ("B_opposite", ~like_training)):
        per_class = {target.class_names[k]: {"n": int((members & (split.y == k)).sum()),
                                             "acc": float((predicted[members & (split.y == k)] == k).float().mean())}
                     for k in range(len(target.class_names))}
        report[name] = {"n": int(members.sum()), "acc": float((predicted[members] == split.y[members]).float().mean()),
                        "per_class": per_class}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target")
    parser.add_argument("--attribute", choices=["brightness", "size", "contrast"])
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--high-class")
    parser.add_argument("--kind", default="patch")
    parser.add_argument("--strength", type=float, default=1.0)
    parser.add_argument("--feature-class", default="coat")
    args = parser.parse_args()
    target = load_target(args.target)
    split = target_datamodule(target).splits["test"]
    if args.attribute:
        report = held_out_by_attribute(target, split, args.attribute, args.threshold,
                                       class_index(args.high_class, target.class_names))
        print(json.dumps(report, indent=1))
        return
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
