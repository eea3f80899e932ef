"""Rendering the scenes of several classes in one renderer call (a union table of primitives) draws the
pixels of one call per class, bit for bit; so does any packing of the classes into calls (``drawing.chunks``).

The union gives each kind as many slots as the most any class present has; a scene's missing slots are
padding that no ray is tested against, a single convex primitive still casts no shadow rays (per scene),
and a single-primitive class, which skips culling alone, is culled in the union (culling only drops rays
that cannot hit). Compared with ``torch.equal`` on images and masks, shadows on and off.
"""

from __future__ import annotations

import pytest
import torch

from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.shapes.catalogue import build_primitives, union_primitives
from advaudit.worlds.shapes.drawing import chunks

SINGLE = ["can", "barrel"]                        # one primitive each (a frustum, a clipped spheroid)
SEVERAL = ["bowl", "mug", "bottle", "lamp", "table", "chair", "cap", "vase"]


def _scenes(world: ShapeWorld, per_class: int, q: int, seed: int):
    """``per_class`` test instances of each class, interleaved (no class's scenes are consecutive), under
    ``q`` random conditions each."""
    z = world.instances("test")
    k = len(world.class_names)
    order = torch.arange(len(z)).view(k, -1)[:, :per_class].t().reshape(-1)
    return z.subset(order), world.random_conditions(len(order), q, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("shadows", [True, False])
@pytest.mark.parametrize("classes", [None, SINGLE, SEVERAL], ids=["all", "single", "several"])
def test_union_call_draws_the_pixels_of_one_call_per_class(shadows: bool, classes: list[str] | None) -> None:
    # single: enough scenes that shadow rays cast from cans and barrels would hit their own primitive
    # somewhere (with them cast, 6-12 colour values of these 320 scenes at 32 px changed for seeds 0-5)
    many = classes == SINGLE
    world = ShapeWorld(image_size=32 if many else 24, shadows=shadows, classes=classes)
    z, s = _scenes(world, 10 if many else 3, 16 if many else 4, seed=len(classes or ()) + shadows)
    union = world._render(z, s, "both", per=len(z) * s.shape[1])
    per_class = world._render(z, s, "both", per=0)
    assert float(union[1].float().mean()) > 0.05                   # the objects cover real areas
    assert torch.equal(union[0], per_class[0]) and torch.equal(union[1], per_class[1])
    assert torch.equal(world._render(z, s, "image", per=len(z) * s.shape[1]), per_class[0])
    assert torch.equal(world._render(z, s, "mask", per=len(z) * s.shape[1]), per_class[1])
    two = world._render(z, s, "both", per=2 * len(z) * s.shape[1] // len(world.class_names))  # two classes a call
    assert torch.equal(two[0], per_class[0]) and torch.equal(two[1], per_class[1])


def test_union_of_consecutive_class_blocks_and_of_one_scene_per_class() -> None:
    world = ShapeWorld(image_size=16, shadows=True)
    z = world.instances("test")
    s = world.random_conditions(len(z), 2, torch.Generator().manual_seed(5))        # classes in blocks
    per_class = world._render(z, s, "image", per=0)
    for per in (len(z) * 2, 60, 1):                                                   # drawn in place
        assert torch.equal(world._render(z, s, "image", per=per), per_class)
    rows = torch.arange(0, len(z), 10)                                                # one scene per class
    one = world._render(z.subset(rows), s[rows, :1], "both", per=10)
    assert torch.equal(one[0], world.render(z.subset(rows), s[rows, :1]))
    assert torch.equal(one[0].view(10, -1), world._render(z, s, "image").view(len(z), 2, -1)[rows, 0])


def test_union_table_keeps_each_class_s_slots_in_order_and_counts_them() -> None:
    p = torch.rand(3, 6, generator=torch.Generator().manual_seed(0))
    chair, cap = build_primitives("chair", p[:2]), build_primitives("cap", p[2:])
    members = [torch.tensor([0, 2]), torch.tensor([1])]
    table, counts = union_primitives([(members[0], chair), (members[1], cap)], 3)
    assert table["boxes"].shape == (3, 6, 2, 3) and table["ellipsoids"].shape == (3, 1, 5)
    assert table["frustums"].shape == (3, 0, 4)
    assert torch.equal(table["boxes"][members[0]], chair["boxes"])
    assert torch.equal(table["boxes"][1, :1], cap["boxes"][0]) and not table["boxes"][1, 1:].any()
    assert torch.equal(table["ellipsoids"][1], cap["ellipsoids"][0]) and not table["ellipsoids"][[0, 2]].any()
    assert counts.tolist() == [[6, 0, 0], [1, 0, 1], [6, 0, 0]]


def test_chunks_pack_whole_classes_in_turn_up_to_the_limit() -> None:
    groups = [(name, torch.arange(n)) for name, n in zip("abcde", (5, 3, 4, 10, 1))]

    def packed(per: int) -> list[list[str]]:
        return [[name for name, _ in chunk] for chunk in chunks(groups, per)]

    assert packed(8) == [["a", "b"], ["c"], ["d"], ["e"]]          # a class over the limit: a call of its own
    assert packed(0) == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert packed(23) == [["a", "b", "c", "d", "e"]]
