"""The renderer's culling computes each pixel's ray only where it is needed, with the same values.

Before, every ray of every camera (direction and projection on the origin, ``[HW, B, 4]``) was
computed over the whole pixel grid, then culled by the objects' bounding spheres. Now only the
projection (culling) and the height (sky) are computed over the grid, and the direction only for
the rays that meet a bounding sphere. These tests recompute the whole grid as before, at 224 px
on the reference scenes' cameras, and ask for the same candidate rays, directions and sky.
"""

from __future__ import annotations

import torch

from advaudit.worlds.shapes.catalogue import OBJECT_RADIUS
from advaudit.worlds.shapes.renderer import (GROUND, SKY, _background, _candidates, camera_basis,
                                             pixel_grid)
from tests.worlds.shapes_reference import reference_scenes

SIZE = 224


def _cameras() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Origins ``[B, 3]``, columns ``[B, 3, 4]`` and the pixel grid ``[HW, 3]`` at 224 px."""
    _, _, s = reference_scenes()
    s = s[:, 0]
    origin, basis = camera_basis(s[:, 8], s[:, 9], s[:, 10], s[:, 11])
    columns = torch.cat([basis, basis @ origin[:, :, None]], -1)
    return origin, columns, pixel_grid(SIZE, s.dtype, s.device)


def _all_rays(grid: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """Every ray ``[HW, B, 4]`` over the whole grid, as the renderer computed them before."""
    g = grid[:, :, None, None]
    return (g[:, 0] * columns[:, 0]).addcmul_(g[:, 1], columns[:, 1]).addcmul_(g[:, 2], columns[:, 2])


def test_candidate_rays_and_directions_are_those_of_the_whole_grid() -> None:
    origin, columns, grid = _cameras()
    rays = _all_rays(grid, columns)
    od = rays[..., 3]
    closest = (origin * origin).sum(-1)[None] - od * od
    obj, pix = ((closest <= OBJECT_RADIUS ** 2 * 1.0001) & (od < 0)).t().nonzero(as_tuple=True)  # scene by scene
    new_pix, new_obj, d, _ = _candidates(grid.t().contiguous(), columns, origin)
    assert len(pix) > 1000                                      # the objects cover real areas
    assert torch.equal(new_pix, pix) and torch.equal(new_obj, obj)
    assert float((d - rays[pix, obj, :3]).abs().max()) < 1e-6


def test_sky_is_that_of_the_whole_grid() -> None:
    _, columns, grid = _cameras()
    rays = _all_rays(grid, columns)
    sky, ground = torch.tensor(SKY), torch.tensor(GROUND)
    weight = (0.5 + 0.5 * rays[..., 1]).t()
    before = torch.addcmul(ground[None, :, None], weight[:, None], (sky - ground)[None, :, None])
    after = _background(grid.t().contiguous(), columns)
    assert after.shape == (len(columns), 3, SIZE * SIZE)
    assert float((after - before).abs().max()) < 1e-6
