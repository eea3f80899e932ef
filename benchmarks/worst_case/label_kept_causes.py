"""Do simple image properties tell the worst cases a judge still names from those it does not?

Reads examinations made with ``audit.judge`` (for instance by ``benchmarks/worst_case/label_kept.py``), renders
each instance's worst valid case again in the examination's world box (ShapeWorld, 32 px, the
default box unless ``--factors``), and measures per worst case: the object's area (share of the
frame's pixels), its mean luminance, its contrast with the background (absolute difference of mean
luminances) and its shading (standard deviation of luminance over the object's pixels: 0 for a
flat silhouette). Prints their quartiles for the worst cases the judge names correctly and for the
others, then, for thresholds on each property, how many worst cases a validity check at that
threshold would keep and the judge's share among them. A threshold applied after the search is an
upper bound on what the same check would give inside it (the examiner would then find the next
worst case), so a property that does not lift the share here will not lift it as a check.

    PYTHONPATH=. .venv/bin/python benchmarks/worst_case/label_kept_causes.py RUN_DIR [RUN_DIR ...] [--factors '{...}']
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
import yaml

from advaudit.compare.records import read_run
from advaudit.compare.where.replay import render_worst
from advaudit.worlds.shapes import ShapeWorld

PROPERTIES = ("area", "luminance", "contrast", "shading")
THRESHOLDS = {"area": (0.03, 0.05, 0.07, 0.1), "luminance": (0.08, 0.1, 0.12, 0.15),
              "contrast": (0.05, 0.1, 0.15, 0.2), "shading": (0.01, 0.02, 0.04, 0.07)}


def image_properties(image: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """``image`` ``[3, H, W]`` in [0, 1] and the object's ``mask`` ``[H, W]`` -> the four properties."""
    luminance = image.mean(0)
    inside, outside = luminance[mask], luminance[~mask]
    object_mean = float(inside.mean()) if len(inside) else 0.0
    return {"area": float(mask.float().mean()), "luminance": object_mean,
            "contrast": abs(object_mean - float(outside.mean())),
            "shading": float(inside.std()) if len(inside) > 1 else 0.0}


def worst_case_rows(world: ShapeWorld, run: Path) -> list[dict]:
    """One row per judged instance of one examination: its class, the judge's verdict, the properties."""
    record = read_run(run)
    split = str(record.config.get("audit", {}).get("selection_split", "val"))
    z, s, frame = render_worst(world, record, split)  # the instances by id, their worst conditions [N, C]
    judged = torch.tensor(frame["judge_correct"].notna().to_numpy())
    images, masks = world.render_with_masks(z.subset(judged.nonzero().squeeze(1)), s[judged, None])
    return [{"run": run.name, "class": row["class"], "correct": bool(row["judge_correct"]),
             **image_properties(image, mask)}
            for (_, row), image, mask in zip(frame[judged.numpy()].iterrows(), images, masks)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--factors", default=None, help="the examinations' factor bounds (YAML); default: the world's")
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = ShapeWorld(image_size=32, factors=yaml.safe_load(args.factors) if args.factors else None)
    rows = [row for run in args.runs for row in worst_case_rows(world, run)]
    correct = np.array([row["correct"] for row in rows])
    values = {name: np.array([row[name] for row in rows]) for name in PROPERTIES}
    print(f"{len(rows)} worst cases, judge names {correct.mean():.3f} correctly\n")
    print("| property | quartiles, named correctly | quartiles, not |\n|---|---|---|")
    for name in PROPERTIES:
        q = [np.percentile(values[name][group], [25, 50, 75]).round(3).tolist() for group in (correct, ~correct)]
        print(f"| {name} | {q[0]} | {q[1]} |")
    print("\n| check | worst cases kept | judge names correctly among them |\n|---|---|---|")
    for name in PROPERTIES:
        for threshold in THRESHOLDS[name]:
            keep = values[name] >= threshold
            print(f"| {name} >= {threshold:g} | {int(keep.sum())} | {correct[keep].mean():.3f} |")
    print("\nnot named correctly:", ", ".join(f"{row['class']} ({row['run']})" for row in rows if not row["correct"]))


if __name__ == "__main__":
    main()
