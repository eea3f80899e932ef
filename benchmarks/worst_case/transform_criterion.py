"""Choose TransformWorld's label-kept criterion: which views a reference judge accepts, measured off the final split.

For each candidate criterion of the judge in the check (``--judge``), on ``--per-class`` instances per class of
the **test** split (the final measurement examines the validation split) under ``--views`` uniform random
conditions of the default box (``--seed``): the share of views it rejects, the instances left with no valid
view (and how many of those it does not name even unchanged), and a random-search stand-in for an
examination: each instance's valid view with the lowest true-class probability of the control target
(``--control``, a target block as YAML or JSON), which an independent judge (``--independent``) names or not:
over all instances with a valid view, and over those the independent judge names unchanged. The control's
failure rate (an instance with a valid misclassified view) is given beside it.

Candidates: the true class at probability >= p (argmax, calibrated) for each ``--thresholds``, and the true
class keeping >= r of the probability it has on the unchanged image for each ``--ratios``.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/worst_case/transform_criterion.py --judge J0.pt \\
        --independent J1.pt --control /work/main/outputs/rotation_pair/conf/experiment/plain_s0.yaml
"""

from __future__ import annotations

import argparse
import json

import torch
import yaml
from torch import Tensor

from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.models import load_target
from advaudit.worlds.protocol import Instances
from advaudit.worlds.transforms import TransformWorld


def stratified(world: TransformWorld, split: str, per_class: int) -> Instances:
    """The first ``per_class`` instances of each class of ``split``."""
    z = world.instances(split)
    rows = torch.cat([(z.labels == k).nonzero().squeeze(1)[:per_class] for k in range(len(world.class_names))])
    return z.subset(rows)


def true_probs(model, images: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """Calibrated true-class probability and argmax correctness of ``model`` on ``images``, each ``[B]``."""
    with torch.no_grad():
        probs = torch.cat([model.predict_proba(images[i:i + 1024], calibrated=True) for i in range(0, len(images), 1024)])
    return probs.gather(1, labels[:, None]).squeeze(1), probs.argmax(1) == labels


def evaluate(valid: Tensor, control_p: Tensor, control_ok: Tensor, independent_ok: Tensor,
             named_unchanged: Tensor, judge_unchanged: Tensor) -> dict[str, float]:
    """One criterion's numbers from ``valid`` ``[N, V]`` and the per-view ``[N, V]`` / per-instance ``[N]`` facts."""
    has = valid.any(1)
    worst = torch.where(valid, control_p, torch.inf).argmin(1)
    kept = independent_ok.gather(1, worst[:, None]).squeeze(1)
    named = has & named_unchanged
    return {"rejected": float(1 - valid.float().mean()), "no_valid": int((~has).sum()),
            "no_valid_not_named_unchanged": int((~has & ~judge_unchanged).sum()),
            "kept": float(kept[has].float().mean()), "kept_n": int(has.sum()),
            "kept_given_named": float(kept[named].float().mean()), "kept_given_named_n": int(named.sum()),
            "failure_rate": float((valid & ~control_ok).any(1).float().mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True)
    parser.add_argument("--independent", required=True)
    parser.add_argument("--control", required=True, help="a target block (YAML/JSON file, '# @package' allowed)")
    parser.add_argument("--per-class", type=int, default=20)
    parser.add_argument("--views", type=int, default=64)
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--thresholds", type=float, nargs="*", default=[0.5, 0.7, 0.8, 0.9, 0.95, 0.99])
    parser.add_argument("--ratios", type=float, nargs="*", default=[0.5, 0.8])
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = TransformWorld(FashionMNISTDataModule(seed=0))
    z = stratified(world, "test", args.per_class)
    n, v = len(z), args.views
    s = world.random_conditions(n, v, generator=torch.Generator().manual_seed(args.seed))
    images, labels = world.render(z, s), z.labels.repeat_interleave(v)
    with open(args.control) as handle:
        control = load_target(yaml.safe_load(handle)["target"])
    judge, independent = load_target(args.judge), load_target(args.independent)
    control_p, control_ok = (t.reshape(n, v) for t in true_probs(control, images, labels))
    judge_p, judge_ok = (t.reshape(n, v) for t in true_probs(judge, images, labels))
    independent_ok = true_probs(independent, images, labels)[1].reshape(n, v)
    unchanged_p, unchanged_ok = true_probs(judge, z.data, z.labels)
    named_unchanged = true_probs(independent, z.data, z.labels)[1]
    rows = {"none (content kept only)": torch.ones(n, v, dtype=torch.bool)}
    rows.update({f"true class at >= {p}": judge_ok & (judge_p >= p) for p in args.thresholds})
    rows.update({f"true class keeps >= {r} of its unchanged probability": judge_ok & (judge_p >= r * unchanged_p[:, None])
                 for r in args.ratios})
    print(f"{n} test instances x {v} random default-box views; judge names {float(unchanged_ok.float().mean()):.3f} "
          f"unchanged, the independent judge {float(named_unchanged.float().mean()):.3f}; control accuracy on the views "
          f"{float(control_ok.float().mean()):.3f}")
    for name, valid in rows.items():
        print(json.dumps({"criterion": name, **evaluate(valid, control_p, control_ok, independent_ok,
                                                         named_unchanged, unchanged_ok)}))


if __name__ == "__main__":
    main()
