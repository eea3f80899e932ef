"""Testing a ray against a primitive only where it passes within the primitive's bounding sphere finds
the same hits as testing every primitive.

The renderer used to intersect every candidate ray with every primitive of its object
(``[M, n]`` per kind, the nearest kept); ``culling.nearest`` and ``culling.blocked`` test each
primitive only on the rays whose line passes within its (inflated) bounding sphere. These tests
compute the dense answer as before, on the reference scenes' camera rays at 224 px (all ten
classes) and on shadow rays from their hit points, and ask for the same distances, the same hit
primitives and the same shadows.
"""

from __future__ import annotations

import torch

from advaudit.worlds.shapes.catalogue import build_primitives
from advaudit.worlds.shapes.culling import KINDS, Rays, blocked, nearest, slot_table
from advaudit.worlds.shapes.geometry import INF, normals
from advaudit.worlds.shapes.renderer import _candidates, camera_basis, pixel_grid_components
from tests.worlds.shapes_reference import reference_scenes

SIZE = 224


def _dense(prims: dict, o: torch.Tensor, d: torch.Tensor, obj: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every ray against every primitive of its object, as the renderer did: nearest ``t`` and slot ``[M]``."""
    best_t, best_slot, offset = torch.full((len(o),), INF), torch.zeros(len(o), dtype=torch.long), 0
    for key, intersect in KINDS:
        if prims[key].shape[1] == 0:
            continue
        t, index = intersect(o, d, prims[key].index_select(0, obj)).min(1)
        closer = t < best_t
        best_t, best_slot = torch.where(closer, t, best_t), torch.where(closer, index + offset, best_slot)
        offset += prims[key].shape[1]
    return best_t, best_slot


def _camera_rays() -> list[tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per class of the reference scenes: primitives, origins, directions, scenes and projections of the
    candidate rays."""
    world, z, s = reference_scenes()
    s = s[:, 0]
    out = []
    for cls in range(len(world.class_names)):
        rows = (z.labels == cls).nonzero().squeeze(1)
        prims = build_primitives(world.class_names[cls], z.data["proportions"][rows])
        origin, basis = camera_basis(*s[rows, 8:12].unbind(1))
        columns = torch.cat([basis, basis @ origin[:, :, None]], -1)
        pix, obj, d, od = _candidates(pixel_grid_components(SIZE, s.dtype, s.device), columns, origin)
        out.append((prims, origin, d, obj, od))
    return out


def test_camera_rays_hit_what_every_primitive_tested_would() -> None:
    hits = 0
    for prims, origin, d, obj, od in _camera_rays():
        o = origin.index_select(0, obj)
        t, slot = nearest(slot_table(prims), Rays(o, d, obj, od=od, origin=origin))
        dense_t, dense_slot = _dense(prims, o, d, obj)
        assert torch.equal(t, dense_t)
        hit = torch.isfinite(t)
        assert torch.equal(slot[hit], dense_slot[hit])
        hits += int(hit.sum())
    assert hits > 20_000                                        # the objects cover real areas


def test_shadow_rays_are_blocked_where_every_primitive_tested_would_block_them() -> None:
    g = torch.Generator().manual_seed(0)
    shadowed = 0
    for prims, origin, d, obj, od in _camera_rays():
        o = origin.index_select(0, obj)
        t, _ = _dense(prims, o, d, obj)
        hit = torch.isfinite(t).nonzero().squeeze(1)
        start = o[hit] + t[hit, None] * d[hit] + 1e-3 * torch.nn.functional.normalize(-d[hit], dim=-1)
        towards = torch.nn.functional.normalize(torch.randn(len(hit), 3, generator=g), dim=-1)
        limit = torch.where(torch.rand(len(hit), generator=g) < 0.5, INF, 2 * torch.rand(len(hit), generator=g))
        dense, _ = _dense(prims, start, towards, obj[hit])
        got = blocked(slot_table(prims), Rays(start, towards, obj[hit]), limit)
        assert torch.equal(got, dense < limit)
        shadowed += int(got.sum())
    assert shadowed > 1000


def test_normals_of_one_kind_are_those_of_the_mixed_path() -> None:
    p = torch.randn(50, 3)
    params = torch.rand(50, 6) + torch.tensor([0.0, 0.0, -1.0, 0.5, 0.0, 0.0])
    for k in range(3):
        kind = torch.full((50,), k)
        assert torch.equal(normals(p, kind, params, [k]), normals(p, kind, params, [0, 1, 2]))
