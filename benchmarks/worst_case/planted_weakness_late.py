"""Where an examiner's late proposals go when they do not go to the planted weakness.

For each worst-case run (steps.jsonl), over the late window (last LAST queries per instance):
- ``in_slice``: share with the factor in the unseen arc (as advaudit.report.concentration);
- ``extreme``: share with |camera elevation| > 60 deg or camera distance > 3.5 m (views that
  destroy the label: the worst-case audit's known failure mode), and the same share among random
  conditions' volume (0.47 on ShapeWorld's default box);
- ``edge``: share with at least one interval (non-periodic) factor within the outer 5% of its
  range at either end (a box's corners and faces; random search: about 1 - 0.9^7 = 0.52 with
  ShapeWorld's seven interval factors);
- ``spread``: per instance, the circular spread of the factor over the late proposals
  (1 - mean resultant length: 0 = one value, 1 = uniform on the circle), mean over instances;
- ``worst_in_slice``: share of instances whose lowest true-class probability (all proposals) lies
  in the arc; ``p_in`` / ``p_out``: mean true-class probability of all proposals in / outside it.

    PYTHONPATH=. .venv/bin/python benchmarks/worst_case/planted_weakness_late.py RUN_DIR... --low 270 --high 360 [--last 64]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from advaudit.report.concentration import Region, factor_bounds, late_window
from advaudit.core.records import read_json, read_jsonl


def describe(run_dir: Path, region: Region, last: int) -> dict[str, float | str]:
    """The late-window statistics of one run (module docstring)."""
    result = read_json(run_dir / "result.json")
    bounds = factor_bounds(result["config"])
    names = [b[0] for b in bounds]
    col, elev, dist = names.index(region.factor), names.index("camera_elevation"), names.index("camera_distance")
    _, low, high, periodic = bounds[col]
    records = read_jsonl(run_dir / "steps.jsonl")
    q = len(records[0]["true_prob"])
    first = late_window([r["step"] for r in records], q, last, "queries")
    late: dict[int, list[np.ndarray]] = {}
    worst: dict[int, tuple[float, bool]] = {}
    probs = {True: [], False: []}
    for r in records:
        s = np.asarray(r["s"], dtype=np.float64)                    # [q, factors]
        inside = region.contains(s[:, col], (low, high) if periodic else None)
        for p, ins in zip(r["true_prob"], inside.tolist()):
            probs[ins].append(p)
            key = int(r["instance"])
            if key not in worst or p < worst[key][0]:
                worst[key] = (p, ins)
        if r["step"] >= first:
            late.setdefault(int(r["instance"]), []).append(s)
    rows = [np.concatenate(v) for v in late.values()]              # per instance [late, factors]
    all_late = np.concatenate(rows)
    inside = region.contains(all_late[:, col], (low, high) if periodic else None)
    extreme = (np.abs(all_late[:, elev]) > 60) | (all_late[:, dist] > 3.5)
    edge = np.zeros(len(all_late), dtype=bool)
    for j, (_, lo, hi, circular) in enumerate(bounds):
        if not circular:
            edge |= (all_late[:, j] < lo + 0.05 * (hi - lo)) | (all_late[:, j] > hi - 0.05 * (hi - lo))
    angle = [2 * math.pi * (r[:, col] - low) / (high - low) for r in rows]
    spread = float(np.mean([1 - abs(np.mean(np.exp(1j * a))) for a in angle]))
    return {"run": run_dir.name, "in_slice": float(inside.mean()), "extreme": float(extreme.mean()),
            "in_slice_not_extreme": float((inside & ~extreme).mean()), "edge": float(edge.mean()), "spread": spread,
            "worst_in_slice": float(np.mean([w[1] for w in worst.values()])),
            "p_in": float(np.mean(probs[True])), "p_out": float(np.mean(probs[False]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--factor", default="camera_roll")
    parser.add_argument("--low", type=float, required=True)
    parser.add_argument("--high", type=float, required=True)
    parser.add_argument("--last", type=int, default=64)
    args = parser.parse_args()
    region = Region(args.factor, args.low, args.high)
    keys = ["in_slice", "extreme", "in_slice_not_extreme", "edge", "spread", "worst_in_slice", "p_in", "p_out"]
    print("| run | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
    for run in args.runs:
        row = describe(Path(run), region, args.last)
        print(f"| {row['run']} | " + " | ".join(f"{row[k]:.2f}" for k in keys) + " |", flush=True)


if __name__ == "__main__":
    main()
