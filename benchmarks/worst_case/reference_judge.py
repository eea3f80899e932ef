"""How often a reference judge is right under random conditions, and where in S it is not.

The acceptance figure for ShapeWorld's default bounds: a strong reference model
(``audit.validity.reference``) should be *confidently right* (true-class probability >=
``--min-prob`` and the arg-max) on at least 97% of uniformly random conditions of held-out (test)
instances. This script renders ``--renders`` random conditions of the world's box for every test
instance, judges each with the reference exactly as the audit does
(:class:`advaudit.worlds.validity.ValidityJudge`: geometric checks, then the reference), and reports

- the share of random conditions the reference gets confidently right: overall, and among the
  geometrically valid ones;
- per factor, the same share in ``--bins`` equal-width bins of that factor's range (where in S the
  judge fails: a bin far below the rest is a candidate for narrowing the bounds, or a weakness of
  the judge itself when a human would still see the class);
- a suggested box: outer bins dropped greedily (:func:`advaudit.worlds.judge_box.box_for_share`)
  until the reference is right on ``--target-share`` of the renders left, and the share of the renders
  left inside that box.

Choosing bounds is two runs on different instances and conditions: suggest a box on the validation
instances, then measure that box on the held-out test instances with another seed (the figure to
record; the share on the renders the box was chosen on is biased upwards):

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/worst_case/reference_judge.py <reference target.pt> --split val \
        --bins 10 --out outputs/reference_judge/val
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/worst_case/reference_judge.py <reference target.pt> --split test \
        --seed 1 --factors '{camera_elevation: [-72, 72]}' --out outputs/reference_judge/test

Output: a Markdown table on stdout, ``<out>/reference_judge.json``, every judged condition
(``<out>/judged_conditions.pt``) and a per-factor PNG.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import yaml

from advaudit.models import load_target
from advaudit.core.intervals import format_summary
from advaudit.worlds.judge_box import box_for_share, right_by_bin, share_over_instances
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.settings import ValidityConf
from advaudit.worlds.validity import REFERENCE_CHECK, ValidityJudge


def judge_random_conditions(reference: str, renders: int, factors: dict | None, min_prob: float,
                            seed: int, split: str = "test") -> tuple[ShapeWorld, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Render ``renders`` random conditions per instance of ``split`` at the reference's image size.

    Returns the world, the conditions ``[N * renders, C]`` (factor units), the instance index of each
    ``[N * renders]`` and the checks ``{name: [N * renders] bool}`` (True = passed), ``reference`` among them.
    """
    size = int(load_target(Path(reference)).input_shape[-1])
    world = ShapeWorld(image_size=size, factors=factors)
    judge = ValidityJudge(world, ValidityConf(reference=reference, reference_min_prob=min_prob))
    z = world.instances(split)
    s = world.random_conditions(len(z), renders, torch.Generator().manual_seed(seed))
    checks: dict[str, list[torch.Tensor]] = {}
    for start in range(0, renders, 10):  # 10 conditions per instance per pass: bounded memory
        _, _, passed = judge.render(z, s[:, start:start + 10])
        for name, value in passed.items():
            checks.setdefault(name, []).append(value)
    flat = {name: torch.cat(parts, 1).reshape(-1) for name, parts in checks.items()}
    instance = torch.arange(len(z)).repeat_interleave(renders)
    return world, s.reshape(-1, s.shape[-1]), instance, flat


def plot(table: dict[str, list[dict]], overall: float, path: Path) -> None:
    """One panel per factor: the reference's right share per bin, the overall share dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 4, figsize=(13, 8), sharey=True)
    for ax, (name, rows) in zip(axes.flat, table.items()):
        ax.bar([(r["low"] + r["high"]) / 2 for r in rows], [r["share"] for r in rows],
               width=[(r["high"] - r["low"]) * 0.9 for r in rows])
        ax.axhline(overall, ls="--", c="k", lw=1)
        ax.axhline(0.97, ls=":", c="r", lw=1)
        ax.set_title(name, fontsize=9)
        ax.set_ylim(0, 1)
    for ax in list(axes.flat)[len(table):]:
        ax.axis("off")
    fig.suptitle("reference judge: confidently right share per factor bin (dashed: overall; dotted: 0.97)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", help="the reference judge (a ShapeWorld target.pt)")
    parser.add_argument("--renders", type=int, default=60, help="random conditions per test instance")
    parser.add_argument("--bins", type=int, default=5)
    parser.add_argument("--factors", default=None, help="factor bounds overrides (YAML), default: the world's")
    parser.add_argument("--min-prob", type=float, default=0.5, help="audit.validity.reference_min_prob")
    parser.add_argument("--target-share", type=float, default=0.97,
                        help="suggest the box (outer bins dropped greedily) where the reference is right this often")
    parser.add_argument("--split", default="test", choices=["val", "test"],
                        help="whose instances: choose a box on val, measure it on test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="outputs/reference_judge")
    args = parser.parse_args()
    torch.set_num_threads(1)
    factors = yaml.safe_load(args.factors) if args.factors else None
    world, s, instance, checks = judge_random_conditions(args.reference, args.renders, factors, args.min_prob,
                                                         args.seed, args.split)
    right = checks[REFERENCE_CHECK]
    geometric = torch.ones_like(right)
    for name, passed in checks.items():
        if name != REFERENCE_CHECK:
            geometric &= passed
    table = right_by_bin(world, s, right, args.bins)
    overall = float(right.float().mean())
    bounds, keep = box_for_share(world, s, right, args.bins, args.target_share)
    trimmed = {**share_over_instances(right[keep], instance[keep]), "kept": round(float(keep.float().mean()), 4)}
    result = {"reference": args.reference, "image_size": world.image_shape[-1], "min_prob": args.min_prob,
              "split": args.split, "seed": args.seed, "factors": factors,
              "all": share_over_instances(right, instance),
              "geometrically_valid": share_over_instances(right[geometric], instance[geometric]),
              "geometric_valid_share": round(float(geometric.float().mean()), 4),
              "by_factor": table, "suggested_bounds": bounds, "suggested_box": trimmed}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reference_judge.json").write_text(json.dumps(result, indent=2))
    torch.save({"conditions": s, "instance": instance, "checks": checks,
                "factor_names": [f.name for f in world.factors]}, out / "judged_conditions.pt")
    plot(table, result["all"]["share"], out / "reference_judge_by_factor.png")
    print(f"reference {args.reference} at {result['image_size']} px, {right.numel()} random conditions "
          f"({args.renders} per {args.split} instance), confidently right (p >= {args.min_prob}):")
    print(f"- all: {format_summary(result['all'], 3, centre='share')}")
    print(f"- geometrically valid ({result['geometric_valid_share']:.3f} of them): "
          f"{result['geometrically_valid']['share']:.3f}")
    print(f"- suggested box {bounds} keeps {trimmed['kept']:.3f} of the renders: right on {trimmed['share']:.3f}\n")
    print("| factor | " + " | ".join(f"bin {b + 1}" for b in range(args.bins)) + " |")
    print("|---|" + "---|" * args.bins)
    for name, rows in table.items():
        print(f"| {name} | " + " | ".join(f"[{r['low']:g}, {r['high']:g}]: {r['share']:.2f}" for r in rows) + " |")
    print(f"\n{out / 'reference_judge.json'}, {out / 'reference_judge_by_factor.png'}")


if __name__ == "__main__":
    main()
