"""The worst-case gallery is rendered large enough for a person to tell the object."""

from __future__ import annotations

import torch

from advaudit.audits.worst_case_fresh import GALLERY_PX, gallery_world
from advaudit.worlds.shapes import ShapeWorld


def test_the_gallery_re_renders_small_worlds_at_gallery_size_and_the_same_scene() -> None:
    world = ShapeWorld(image_size=16, instances_per_class={"train": 1, "val": 1, "test": 1})
    large = gallery_world(world)
    z = world.instances("val")
    s = world.random_conditions(len(z), 1, torch.Generator().manual_seed(0))
    small_x, large_x = world.render(z, s), large.render(z, s)
    assert GALLERY_PX >= 64 and large_x.shape[-2:] == (GALLERY_PX, GALLERY_PX) and small_x.shape[-1] == 16
    # the same scene: averaged down to 16 px it matches the 16-px render closely
    pooled = torch.nn.functional.adaptive_avg_pool2d(large_x, 16)
    assert (pooled - small_x).abs().mean() < 0.05
    assert gallery_world(ShapeWorld(image_size=128, instances_per_class={"train": 1, "val": 1, "test": 1})).image_size == 128
