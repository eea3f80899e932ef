"""The sped-up ShapeWorld renderer draws what the renderer before the issue-15 work drew.

The reference (``tests/worlds/data/shapes_reference.pt``, 20 scenes, two per class, 48 px, shadows
on, uint8) was written by ``tests/worlds/shapes_reference.py`` at commit ea46cc3. Tolerance: masks
identical except at most 0.1% of pixels (a silhouette ray whose hit test rounds the other way), and
at most 0.5% of the colour values more than 2/255 apart.
"""

from __future__ import annotations

import pytest
import torch

from advaudit.worlds.shapes.catalogue import build_primitives
from advaudit.worlds.shapes.renderer import _can_shadow_itself
from tests.worlds.shapes_reference import BOX, PATH, reference_scenes


def test_renders_and_masks_match_the_reference_renderer() -> None:
    world, z, s = reference_scenes()
    reference = torch.load(PATH, weights_only=True)
    images = (world.render(z, s) * 255).round().to(torch.uint8)
    masks = world.render_masks(z, s)
    assert images.shape == reference["images"].shape
    assert float((masks != reference["masks"]).float().mean()) <= 1e-3
    far = (images.int() - reference["images"].int()).abs() > 2
    assert float(far.float().mean()) <= 5e-3


def test_only_objects_of_several_primitives_cast_shadow_rays() -> None:
    p = torch.full((1, 6), 0.5)
    assert not _can_shadow_itself(build_primitives("can", p))      # one cylinder: convex
    assert not _can_shadow_itself(build_primitives("barrel", p))   # one clipped spheroid: convex
    assert _can_shadow_itself(build_primitives("mug", p))          # the handle can shadow the body
    world, z, s = reference_scenes()
    lit, unlit = world.render(z, s), type(world)(image_size=world.image_size, shadows=False, factors=BOX).render(z, s)
    single = torch.tensor([world.class_names[int(c)] in ("can", "barrel") for c in z.labels])
    assert torch.equal(lit[single], unlit[single])                 # shadows change nothing there
    assert not torch.equal(lit[~single], unlit[~single])           # and something elsewhere


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_renders_on_cuda_like_on_the_cpu() -> None:
    world, z, s = reference_scenes()
    gpu = type(world)(image_size=world.image_size, shadows=True, factors=BOX, device="cuda")
    images = gpu.render(z, s.cuda())
    assert images.device.type == "cuda"
    assert float((images.cpu() - world.render(z, s)).abs().gt(2 / 255).float().mean()) <= 5e-3
