"""ShapeWorld scenes from unit numbers (what a generator taught by the renderer names with its latent):
the same instances and renders as the world's own draws, within the box, and refused when misshapen."""

from __future__ import annotations

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.worlds.protocol import factor_to_unit
from advaudit.worlds.shapes.world import INSTANCE_UNITS, ShapeWorld, _split_seed, hsv_to_rgb


def _world() -> ShapeWorld:
    return ShapeWorld(image_size=16, instances_per_class={"train": 2, "val": 1, "test": 1}, seed=5,
                      classes=["can", "table", "chair"], factors={"camera_distance": [2.0, 3.0]})


def _units_of_split(world: ShapeWorld, split: str) -> torch.Tensor:
    """The unit numbers ``[N, INSTANCE_UNITS]`` behind ``world.instances(split)``, drawn as it draws them."""
    g = torch.Generator().manual_seed(_split_seed(world.seed, split))
    n = len(world.class_names) * world.counts[split]
    return torch.cat([torch.rand(n, 6, generator=g)] + [torch.rand(n, 1, generator=g) for _ in range(5)], 1)


def test_instances_are_the_formulas_of_their_unit_numbers() -> None:
    world = _world()
    u = _units_of_split(world, "train")
    data = world.instances("train").data
    # the attribute ranges, written out (a known answer, independent of instance_data)
    assert torch.equal(data["proportions"], u[:, :6])
    assert torch.equal(data["albedo"], hsv_to_rgb(u[:, 6], 0.35 + 0.55 * u[:, 7], 0.45 + 0.5 * u[:, 8]))
    assert torch.equal(data["specular"], 0.5 * u[:, 9]) and torch.equal(data["shininess"], 8 + 56 * u[:, 10])


def test_scenes_from_units_render_what_the_world_renders() -> None:
    world = _world()
    instances = world.instances("val")
    s = world.random_conditions(len(instances), 1, torch.Generator().manual_seed(1))  # [N, 1, 12]
    u = torch.cat([_units_of_split(world, "val"), factor_to_unit(s[:, 0], world.factors)], 1)
    assert world.scene_units == INSTANCE_UNITS + 12 == u.shape[1]
    named, s_named = world.scenes_from_units(u, instances.labels)
    assert torch.allclose(s_named, s, atol=1e-4)
    images, masks = world.render_with_masks(named, s_named)
    assert torch.allclose(images, world.render(instances, s), atol=1e-4)
    assert torch.equal(masks, world.render_masks(instances, s)) and bool(masks.any())
    assert (named.ids == -1).all()  # new instances, in no split


def test_uniform_units_stay_in_the_box_and_misshapen_units_are_refused() -> None:
    world = _world()
    u = torch.rand(50, world.scene_units, generator=torch.Generator().manual_seed(2))
    _, s = world.scenes_from_units(u, torch.arange(50) % 3)
    distance = s[:, 0, [f.name for f in world.factors].index("camera_distance")]
    assert float(distance.min()) >= 2.0 and float(distance.max()) <= 3.0
    with pytest.raises(AdvauditError, match=r"u must be \[N=50, 23\]"):
        world.scenes_from_units(u[:, :20], torch.arange(50) % 3)
