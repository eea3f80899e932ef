"""TransformWorld's worst cases judged by an independent judge: does the default box keep the label?

For each finished examination (``examine.py world=transforms ...``, a run folder with ``result.json``),
every instance's worst valid case is re-rendered from the run (the world rebuilt from its config, the
instance taken by id: :func:`advaudit.compare.where.replay.render_worst`) and shown to ``--judge`` (one
target.pt, or several: an ensemble averaging their calibrated probabilities). Counted over the worst
cases the audit counts as failures (the instance's ``failed``: a valid view the examined model
misclassifies): the share whose label the judge still names, (a) its top-1 is the true class and
(b) its true-class probability is >= ``--threshold``, each with a 95% Wilson interval. Beside it, from
the run: the failure rate (Wilson), the examined model's accuracy on the run's random conditions of the
box (all, and valid ones), the share of random conditions the check throws out, the reference judge in
the check and its threshold; and the independent judge's own accuracy on ``--random`` uniform random
conditions per instance of the same box (its baseline). ``--test-views`` adds the judge's accuracy on one
random default-box view of each Fashion-MNIST test image.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/worst_case/transform_label_kept.py \\
        --judge outputs/s13judge/cnn_s1.pt --judge outputs/s13judge/cnn_s3.pt --threshold 0.5 --test-views 10000 \\
        outputs/s13judge/ex/rl_s0 outputs/s13judge/ex/rl_s1 outputs/s13judge/ex/rl_s2 outputs/s13judge/ex/bo_s0
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import Tensor

from advaudit.compare.power import wilson
from advaudit.compare.records import read_run
from advaudit.compare.where.replay import render_worst
from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.models import load_target
from advaudit.worlds import build_world
from advaudit.worlds.protocol import Instances
from advaudit.worlds.transforms import TransformWorld


def ensemble_probs(judges: list[Any], images: Tensor, batch: int = 512) -> Tensor:
    """Mean calibrated probabilities ``[B, K]`` of ``judges`` on ``images`` ``[B, C, H, W]``."""
    with torch.no_grad():
        return torch.cat([torch.stack([j.predict_proba(images[i:i + batch], calibrated=True) for j in judges]).mean(0)
                          for i in range(0, len(images), batch)])


def share(hits: Tensor) -> dict[str, Any]:
    """``hits`` ``[N]`` bool -> the share with its 95% Wilson interval."""
    k, n = int(hits.sum()), len(hits)
    lo, hi = wilson(k, n) if n else (float("nan"), float("nan"))
    return {"k": k, "n": n, "share": k / n if n else float("nan"), "lo": lo, "hi": hi}


def judge_run(run_dir: Path, judges: list[Any], threshold: float, n_random: int, seed: int,
              factors: dict[str, Any] | None = None) -> dict[str, Any]:
    """One examination's failures judged by the ensemble ``judges``, with the run's own numbers beside them;
    ``factors`` overrides the world's box (for runs made before a default box changed)."""
    record = read_run(run_dir)
    config, result = record.config, json.loads((Path(run_dir) / "result.json").read_text())
    world = build_world({**config["world"], **({"factors": factors} if factors else {})})
    z, s, frame = render_worst(world, record, str((config.get("audit") or {}).get("selection_split", "val")))
    probs = ensemble_probs(judges, world.render(z, s.unsqueeze(1)))
    top1 = probs.argmax(1) == z.labels
    p_true = probs.gather(1, z.labels[:, None]).squeeze(1)
    failed = torch.as_tensor(frame["failed"].to_numpy(bool).copy())
    random_s = world.random_conditions(len(z), n_random, generator=torch.Generator().manual_seed(seed))
    random_ok = ensemble_probs(judges, world.render(z, random_s)).argmax(1) == z.labels.repeat_interleave(n_random)
    instances = len(record.per_instance())
    reference = result.get("validity_reference")
    return {"run": str(run_dir), "examiner": str(config["examiner"].get("name", config["examiner"].get("_target_"))),
            "seed": int(config["seed"]), "reference": reference, "instances": instances,
            "without_valid": instances - len(z), "failure_rate": share(torch.cat([failed, torch.zeros(instances - len(z),
                                                                                                         dtype=torch.bool)])),
            "kept_top1": share(top1[failed]), "kept_threshold": share((top1 & (p_true >= threshold))[failed]),
            "judge_random": float(random_ok.float().mean()),
            "model_random": result.get("examine/random_accuracy"),
            "model_random_valid": result.get("examine/random_valid_accuracy"),
            "random_invalid": result.get("examine/random_invalid_share")}


def test_views(judges: list[Any], n: int, seed: int) -> float:
    """The ensemble's accuracy on one uniform random default-box view of each of the first ``n`` Fashion-MNIST
    test images."""
    world = TransformWorld(FashionMNISTDataModule(seed=0))
    test = world.datamodule.split("test")
    n = min(n, len(test.y))
    s = world.random_conditions(n, 1, generator=torch.Generator().manual_seed(seed))
    correct = []
    for start in range(0, n, 2000):
        rows = torch.arange(start, min(start + 2000, n))
        z = Instances(test.x[rows], test.y[rows], rows)
        correct.append(ensemble_probs(judges, world.render(z, s[rows])).argmax(1) == test.y[rows])
    return float(torch.cat(correct).float().mean())


def row(r: dict[str, Any], threshold: float) -> str:
    """One Markdown table row of :func:`judge_run`'s result."""
    def fmt(x: dict[str, Any]) -> str:
        return f"{x['share']:.3f} [{x['lo']:.2f}, {x['hi']:.2f}] ({x['k']} of {x['n']})"
    check = Path(str(r["reference"])).name if r["reference"] else "none"
    return (f"| {r['examiner']} | {r['seed']} | {check} | {fmt(r['kept_top1'])} | {fmt(r['kept_threshold'])} | "
            f"{fmt(r['failure_rate'])} | {r['model_random']:.3f} / {r['model_random_valid']:.3f} | "
            f"{r['random_invalid']:.1%} | {r['without_valid']} | {r['judge_random']:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--judge", action="append", required=True,
                        help="a judge's target.pt; repeat it for an ensemble averaging their probabilities")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--random", type=int, default=16, help="random conditions per instance for the judge's baseline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-views", type=int, default=0,
                        help="also the judge's accuracy on one random default-box view of this many test images")
    parser.add_argument("--factors", default=None, help="the box the runs were made in, as YAML, where the default changed since")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    judges = [load_target(p) for p in args.judge]
    factors = yaml.safe_load(args.factors) if args.factors else None
    rows = [judge_run(run, judges, args.threshold, args.random, args.seed, factors) for run in args.runs]
    print(f"| examiner | seed | reference judge in the check | failures whose label the judge names (top-1) | "
          f"... at true-class p >= {args.threshold} | failure rate | model's accuracy on random conditions (all / valid) "
          f"| random conditions thrown out | instances without a valid view | judge on random views |")
    print("|" + "---|" * 10)
    for r in rows:
        print(row(r, args.threshold))
    pooled = {key: share(torch.tensor([True] * sum(r[key]["k"] for r in rows)
                                      + [False] * sum(r[key]["n"] - r[key]["k"] for r in rows)))
              for key in ("kept_top1", "kept_threshold")}
    print(f"pooled over the runs: top-1 {pooled['kept_top1']}; threshold {pooled['kept_threshold']}")
    summary: dict[str, Any] = {"judges": args.judge, "threshold": args.threshold, "runs": rows, "pooled": pooled}
    if args.test_views:
        summary["judge_test_views"] = test_views(judges, args.test_views, args.seed + 7)
        print(f"judge on one random default-box view of each of the first {args.test_views} test images: "
              f"{summary['judge_test_views']:.3f}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
