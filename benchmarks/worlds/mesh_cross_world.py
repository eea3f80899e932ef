"""The sim-to-sim gap: targets evaluated on ShapeWorld and on Mitsuba (MeshWorld) renders of the
same test objects under the same conditions.

    .venv/bin/python benchmarks/worlds/mesh_cross_world.py --target <target.pt> [--target ...]
        [--m 10] [--spp 16] [--factors '{"camera_distance": [2, 3.5]}'] [--out /tmp/mesh_cross_world]

ShapeWorld's test objects are exported as meshes (``export_shapes``: identical geometry, ids and
colours; tests/worlds/test_meshes.py checks the silhouettes agree), then each of the instances is
rendered ``m`` times under uniform random Table-1 conditions by both renderers. For each target:
accuracy and mean true-class probability in each world, and the paired difference, each with a 95%
bootstrap interval over *instances* (the independent units; the m renders of one instance are
averaged first). Only the renderer differs: shading model (Phong + sky gradient vs. path-traced
diffuse with a ground plane, cast shadows on it, ambient light and Monte Carlo noise).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import torch

from advaudit.models import load_target
from advaudit.core.intervals import format_summary, mean_with_ci
from advaudit.runtime import configure_threads
from advaudit.worlds.meshes import MeshWorld
from advaudit.worlds.meshes.export_shapes import export_shapes
from advaudit.worlds.shapes import ShapeWorld


def per_instance(target, x: torch.Tensor, labels: torch.Tensor, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-instance accuracy and true-class probability ``[N]`` each, averaged over its ``m`` renders."""
    with torch.no_grad():
        probs = target.predict_proba(x, calibrated=False)
    y = labels.repeat_interleave(m)
    correct = (probs.argmax(1) == y).double().view(-1, m).mean(1)
    true_prob = probs[torch.arange(len(y)), y].double().view(-1, m).mean(1)
    return correct.numpy(), true_prob.numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", action="append", required=True, help="target.pt (repeatable)")
    parser.add_argument("--m", type=int, default=10, help="conditions per test instance")
    parser.add_argument("--per-class", type=int, default=10, help="test instances per class")
    parser.add_argument("--spp", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="ShapeWorld's seed (the targets' world)")
    parser.add_argument("--factors", type=json.loads, default=None,
                        help='factor bounds overrides (JSON), e.g. \'{"camera_distance": [2, 3.5]}\'')
    parser.add_argument("--out", default="/tmp/mesh_cross_world")
    args = parser.parse_args()
    configure_threads(1)
    out = Path(args.out)
    root = out / f"meshes-s{args.seed}-{args.per_class}"
    if not (root / "manifest.json").exists():
        export_shapes(root, {"train": 0, "val": 0, "test": args.per_class}, seed=args.seed)
    rows = []
    images: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    for path in args.target:
        target = load_target(path)
        size = int(target.input_shape[-1])
        if size not in images:
            shapes = ShapeWorld(image_size=size, instances_per_class={"test": args.per_class}, seed=args.seed,
                                factors=args.factors)
            meshes = MeshWorld(str(root), image_size=size, spp=args.spp, threads=1, seed=args.seed,
                               split_fractions={"train": 0, "val": 0, "test": 1}, factors=args.factors)
            z_shape, z_mesh = shapes.instances("test"), meshes.instances("test")
            assert z_shape.labels.tolist() == z_mesh.labels.tolist()
            s = shapes.random_conditions(len(z_shape), args.m, torch.Generator().manual_seed(args.seed))
            images[size] = (shapes.render(z_shape, s), meshes.render(z_mesh, s), z_shape.labels)
        x_shape, x_mesh, labels = images[size]
        acc_s, prob_s = per_instance(target, x_shape, labels, args.m)
        acc_m, prob_m = per_instance(target, x_mesh, labels, args.m)
        row = {"target": path, "size": size, "n_instances": len(labels), "m": args.m, "factors": args.factors,
               "shapeworld_acc": mean_with_ci(acc_s), "meshworld_acc": mean_with_ci(acc_m),
               "acc_gap": mean_with_ci(acc_s - acc_m), "shapeworld_true_prob": mean_with_ci(prob_s),
               "meshworld_true_prob": mean_with_ci(prob_m), "true_prob_gap": mean_with_ci(prob_s - prob_m)}
        rows.append(row)
        fmt = lambda d: format_summary(d, 3)  # noqa: E731
        print(f"{path}: accuracy ShapeWorld {fmt(row['shapeworld_acc'])} vs Mitsuba {fmt(row['meshworld_acc'])}, "
              f"gap {fmt(row['acc_gap'])}; true-class prob {fmt(row['shapeworld_true_prob'])} vs "
              f"{fmt(row['meshworld_true_prob'])}, gap {fmt(row['true_prob_gap'])}", flush=True)
    print(f"load: {os.getloadavg()[0]:.2f}")
    (out / "results.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
