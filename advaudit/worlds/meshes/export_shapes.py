"""Export ShapeWorld's objects as triangle meshes, so MeshWorld has data without any download.

``python -m advaudit.worlds.meshes.export_shapes <dir> [--train 40 --val 10 --test 10] [--seed 0]
[--layout plain|shapenet]`` writes one ``.obj`` per ShapeWorld instance (the same instances, ids
and colours as ``ShapeWorld(seed=...)``) and a ``manifest.json`` giving each file's split, albedo
and ShapeWorld id, and the class order of ShapeWorld (so a target trained on ShapeWorld reads
MeshWorld's labels right). ``plain`` writes ``<dir>/<class>/<split>_<id>.obj``; ``shapenet`` writes the
ShapeNetCore v2 layout ``<dir>/<synset>/<id>/models/model_normalized.obj`` (ShapeNet has no
barrel or vase: they go to its ``trash_bin`` and ``jar`` synsets).

Primitives become meshes exactly: boxes are boxes; frustums and clipped spheroids are solids of
revolution of their (radius, height) profiles with ``sections`` segments around the axis. Objects
are written inside the unit sphere exactly as ShapeWorld places them (its bound scaled to 1; the
manifest says ``normalised``), so MeshWorld with ``object_radius=0.6`` has ShapeWorld's geometry.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from advaudit.errors import require
from advaudit.worlds.meshes.layouts import SHAPENET_SYNSETS, SYNSET_OF
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.shapes.catalogue import OBJECT_RADIUS, build_primitives

SECTIONS = 32
PROFILE_STEPS = 12
SHAPENET_STAND_INS = {"barrel": "02747177", "vase": "03593526"}  # trash bin ("trash barrel"), jar


def _revolve(profile: np.ndarray, sections: int = SECTIONS):
    """A closed solid from a (radius, height) ``profile`` ``[P, 2]`` revolved about the y axis."""
    import trimesh  # trimesh: only the mesh world needs it

    mesh = trimesh.creation.revolve(profile, sections=sections)  # about z
    mesh.vertices = mesh.vertices[:, [0, 2, 1]] * np.array([1.0, 1.0, -1.0])  # z up -> y up
    return mesh


def frustum_mesh(r0: float, r1: float, y0: float, y1: float):
    """Capped cone segment of radii ``r0`` at ``y0`` and ``r1`` at ``y1``."""
    return _revolve(np.array([[0.0, y0], [r0, y0], [r1, y1], [0.0, y1]]))


def spheroid_mesh(r: float, ry: float, yc: float, ylo: float, yhi: float):
    """Spheroid (radius ``r``, half-height ``ry``, centre ``yc``) clipped to ``ylo <= y <= yhi``."""
    # cosine spacing puts more rings near the poles, where the radius changes fastest
    t = (1 - np.cos(np.linspace(0, np.pi, PROFILE_STEPS + 1))) / 2
    ys = ylo + t * (yhi - ylo)
    radii = r * np.sqrt(np.clip(1 - ((ys - yc) / ry) ** 2, 0, None))
    return _revolve(np.concatenate([[[0.0, ylo]], np.stack([radii, ys], 1), [[0.0, yhi]]]))


def primitives_to_mesh(prims: Mapping[str, torch.Tensor], g: int):
    """One trimesh of object ``g`` of a batch of ShapeWorld primitives (all parts concatenated)."""
    import trimesh  # trimesh: only the mesh world needs it

    parts = [trimesh.creation.box(bounds=box.numpy()) for box in prims["boxes"][g].double()]
    parts += [frustum_mesh(*map(float, f)) for f in prims["frustums"][g]]
    parts += [spheroid_mesh(*map(float, e)) for e in prims["ellipsoids"][g]]
    return trimesh.util.concatenate(parts)


def _relative_path(layout: str, class_name: str, split: str, instance_id: int) -> Path:
    if layout == "shapenet":
        synset = SYNSET_OF.get(class_name) or SHAPENET_STAND_INS[class_name]
        return Path(synset) / f"shapeworld{instance_id:07d}" / "models" / "model_normalized.obj"
    return Path(class_name) / f"{split}_{instance_id:07d}.obj"


def export_shapes(out_dir: str | Path, instances_per_class: Mapping[str, int] | None = None, seed: int = 0,
                  layout: str = "plain", classes: Sequence[str] | None = None) -> Path:
    """Write ShapeWorld's instances as meshes under ``out_dir``; returns its manifest path."""
    require(layout in ("plain", "shapenet"), f"layout={layout!r}; use plain or shapenet")
    out = Path(out_dir)
    world = ShapeWorld(instances_per_class=instances_per_class, seed=seed, classes=list(classes) if classes else None)
    manifest: dict[str, dict] = {}
    for split in ("train", "val", "test"):
        if int(world.counts.get(split, 0)) < 1:
            continue
        z = world.instances(split)
        for label, class_name in enumerate(world.class_names):
            members = (z.labels == label).nonzero().squeeze(1)
            prims = build_primitives(class_name, z.data["proportions"][members])
            for g, index in enumerate(members.tolist()):
                instance_id = int(z.ids[index])
                relative = _relative_path(layout, class_name, split, instance_id)
                (out / relative).parent.mkdir(parents=True, exist_ok=True)
                mesh = primitives_to_mesh(prims, g)
                mesh.vertices = mesh.vertices / OBJECT_RADIUS  # ShapeWorld's bounding sphere -> the unit sphere
                mesh.export(out / relative)
                manifest[relative.as_posix()] = {"split": split, "class": class_name, "shapeworld_id": instance_id,
                                                 "albedo": [round(float(c), 6) for c in z.data["albedo"][index]]}
    path = out / "manifest.json"
    names = world.class_names if layout == "plain" else [
        SHAPENET_SYNSETS[SYNSET_OF.get(c) or SHAPENET_STAND_INS[c]] for c in world.class_names]
    path.write_text(json.dumps({"source": {"world": "shapes", "seed": seed, "counts": world.counts},
                                "classes": names, "normalised": True, "meshes": manifest}, indent=1))
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="folder to write (created)")
    parser.add_argument("--train", type=int, default=40, help="instances per class in train")
    parser.add_argument("--val", type=int, default=10)
    parser.add_argument("--test", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0, help="ShapeWorld's seed (same instances as world.seed)")
    parser.add_argument("--layout", choices=["plain", "shapenet"], default="plain")
    parser.add_argument("--classes", nargs="*", default=None)
    args = parser.parse_args(argv)
    manifest = export_shapes(args.out_dir, {"train": args.train, "val": args.val, "test": args.test},
                             args.seed, args.layout, args.classes)
    count = len(json.loads(manifest.read_text())["meshes"])
    print(f"wrote {count} meshes and {manifest}")


if __name__ == "__main__":
    main()
