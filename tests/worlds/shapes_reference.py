"""Writes ``tests/worlds/data/shapes_reference.pt``: ShapeWorld renders (uint8) that
``tests/worlds/test_shapes_renderer.py`` compares every later renderer with.

Written once with the renderer as it was before the issue-15 speed work (commit ea46cc3):
    .venv/bin/python -m tests.worlds.shapes_reference
"""

from __future__ import annotations

from pathlib import Path

import torch

from advaudit.worlds.shapes import ShapeWorld

PATH = Path(__file__).parent / "data" / "shapes_reference.pt"
SIZE, SCENES_PER_CLASS = 48, 2


#: the box the reference was drawn in (Table 1 with camera distance [1.5, 4] m): the same scenes
BOX = {"camera_distance": [1.5, 4.0], "camera_elevation": [-90.0, 90.0], "sun_energy": [0.0, 5.0]}


def reference_scenes() -> tuple[ShapeWorld, object, torch.Tensor]:
    """The world, instances (two per class) and conditions ``[20, 1, 12]`` the reference shows."""
    world = ShapeWorld(image_size=SIZE, shadows=True, factors=BOX)
    z = world.instances("test")
    per_class = torch.cat([(z.labels == c).nonzero().squeeze(1)[:SCENES_PER_CLASS] for c in range(len(world.class_names))])
    s = world.random_conditions(len(per_class), 1, torch.Generator().manual_seed(15))
    return world, z.subset(per_class), s


def main() -> None:
    world, z, s = reference_scenes()
    images = (world.render(z, s) * 255).round().to(torch.uint8)
    PATH.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"images": images, "masks": world.render_masks(z, s)}, PATH)
    print(f"wrote {PATH}: {tuple(images.shape)}")


if __name__ == "__main__":
    main()
