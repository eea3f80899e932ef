"""A ShapeWorld scene's pixels do not depend on the batch it is rendered in.

A shard of a worst-case examination renders its instances' queries in a batch of its own; for the merge to
equal one job, every image must be the one the whole batch draws, to the bit. Found at 40 instances x 500
BO queries: one pixel in ~3,000 images came out 1-3e-8 different (the specular term's ``pow`` in PyTorch's
scalar tail loop, and the normalisations' reductions), and two of 40 instances then searched elsewhere.
"""

from __future__ import annotations

import torch

from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.shapes.renderer import _pow


def test_every_scene_renders_alike_in_the_whole_batch_in_halves_and_alone() -> None:
    world = ShapeWorld(image_size=32, shadows=True)
    z = world.instances("test").subset(torch.arange(0, 80, 2))             # 40 instances, four per class
    s = world.random_conditions(len(z), 8, torch.Generator().manual_seed(1))  # a seed the old renderer failed
    whole = world.render(z, s).view(len(z), 8, 3, 32, 32)
    for shard in (0, 1):                                                    # every other instance, as a shard
        rows = torch.arange(shard, len(z), 2)
        part = world.render(z.subset(rows), s[rows]).view(len(rows), 8, 3, 32, 32)
        assert torch.equal(part, whole[rows])
    for i in (0, 17, 33):
        for j in (0, 7):
            alone = world.render(z.subset(torch.tensor([i])), s[i:i + 1, j:j + 1])[0]
            assert torch.equal(alone, whole[i, j])


def test_pow_of_an_element_does_not_depend_on_how_many_are_computed_with_it() -> None:
    g = torch.Generator().manual_seed(0)
    base, exponent = torch.rand(5000, generator=g), 8 + 56 * torch.rand(5000, generator=g)
    whole = _pow(base, exponent)
    assert torch.allclose(whole, base ** exponent, rtol=1e-6, atol=0)
    for n in (1, 3, 17, 31, 33, 100, 1001):
        assert torch.equal(_pow(base[:n], exponent[:n]), whole[:n])
        assert torch.equal(_pow(base[n:2 * n], exponent[n:2 * n]), whole[n:2 * n])
