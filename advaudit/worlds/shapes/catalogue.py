"""ShapeWorld's object classes: everyday objects composed of three analytic primitives.

Every primitive lives in object space (y up) so intersection stays closed-form:

- ``boxes``      ``[G, nb, 2, 3]``: axis-aligned boxes (low corner, high corner)
- ``frustums``   ``[G, nf, 4]``: capped cone segments on the y axis ``(r0, r1, y0, y1)``; a
  cylinder is ``r0 == r1``
- ``ellipsoids`` ``[G, ne, 5]``: spheroids on the y axis ``(R, Ry, yc, ylo, yhi)`` clipped to
  ``ylo <= y <= yhi`` with flat caps

Each class maps a batch of per-instance proportions ``p`` ``[G, 6]`` in [0, 1] to its primitives;
objects are then centred vertically and scaled to a bounding radius of :data:`OBJECT_RADIUS`.
Pairs such as barrel/bowl/can (from below), bottle/vase and table/chair (from the side) are
genuinely ambiguous from some views, as in the paper.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

OBJECT_RADIUS = 0.6
N_PROPORTIONS = 6
Primitives = dict[str, Tensor]


def _lerp(p: Tensor, low: float, high: float) -> Tensor:
    return low + p * (high - low)


def _box(x0: Tensor, y0: Tensor, z0: Tensor, x1: Tensor, y1: Tensor, z1: Tensor) -> Tensor:
    """``[G, 2, 3]`` box from per-instance corner coordinates ``[G]``."""
    return torch.stack([torch.stack([x0, y0, z0], -1), torch.stack([x1, y1, z1], -1)], -2)


def _empty(g: int, shape: tuple[int, ...], like: Tensor) -> Tensor:
    return like.new_zeros((g, 0, *shape))


def _prims(p: Tensor, boxes: list[Tensor] = (), frustums: list[Tensor] = (),
           ellipsoids: list[Tensor] = ()) -> Primitives:
    g = len(p)
    return {
        "boxes": torch.stack(list(boxes), 1) if boxes else _empty(g, (2, 3), p),
        "frustums": torch.stack(list(frustums), 1) if frustums else _empty(g, (4,), p),
        "ellipsoids": torch.stack(list(ellipsoids), 1) if ellipsoids else _empty(g, (5,), p),
    }


def _cyl(r: Tensor, y0: Tensor, y1: Tensor) -> Tensor:
    return torch.stack([r, r, y0, y1], -1)


def _cone(r0: Tensor, r1: Tensor, y0: Tensor, y1: Tensor) -> Tensor:
    return torch.stack([r0, r1, y0, y1], -1)


def can(p: Tensor) -> Primitives:
    r, h = _lerp(p[:, 0], 0.30, 0.45), _lerp(p[:, 1], 0.8, 1.3)
    return _prims(p, frustums=[_cyl(r, -h / 2, h / 2)])


def barrel(p: Tensor) -> Primitives:
    h, bulge = _lerp(p[:, 1], 0.8, 1.2), _lerp(p[:, 2], 1.15, 1.45)
    r = _lerp(p[:, 0], 0.38, 0.5)
    ry = h / 2 * bulge
    return _prims(p, ellipsoids=[torch.stack([r * bulge, ry, torch.zeros_like(h), -h / 2, h / 2], -1)])


def bowl(p: Tensor) -> Primitives:
    r, depth = _lerp(p[:, 0], 0.5, 0.65), _lerp(p[:, 1], 0.3, 0.5)
    zero = torch.zeros_like(r)
    foot = _cyl(r * _lerp(p[:, 2], 0.3, 0.45), -depth - 0.05, -depth + 0.02)
    return _prims(p, frustums=[foot], ellipsoids=[torch.stack([r, depth, zero, -depth, zero], -1)])


def mug(p: Tensor) -> Primitives:
    r, h = _lerp(p[:, 0], 0.3, 0.4), _lerp(p[:, 1], 0.6, 0.9)
    reach, thick = _lerp(p[:, 2], 0.15, 0.25), _lerp(p[:, 3], 0.04, 0.07)
    handle = _box(r - 0.03, -h / 4, -thick, r + reach, h / 4, thick)
    return _prims(p, boxes=[handle], frustums=[_cyl(r, -h / 2, h / 2)])


def bottle(p: Tensor) -> Primitives:
    r, body = _lerp(p[:, 0], 0.22, 0.32), _lerp(p[:, 1], 0.7, 1.0)
    neck_r, neck = r * _lerp(p[:, 2], 0.3, 0.45), _lerp(p[:, 3], 0.25, 0.45)
    shoulder = _lerp(p[:, 4], 0.15, 0.3)
    y0 = torch.zeros_like(r)
    return _prims(p, frustums=[_cyl(r, y0, body), _cone(r, neck_r, body, body + shoulder),
                               _cyl(neck_r, body + shoulder, body + shoulder + neck)])


def lamp(p: Tensor) -> Primitives:
    base_r, pole_h = _lerp(p[:, 0], 0.25, 0.4), _lerp(p[:, 1], 0.7, 1.1)
    shade_lo, shade_hi = _lerp(p[:, 2], 0.4, 0.55), _lerp(p[:, 3], 0.18, 0.3)
    shade_h = _lerp(p[:, 4], 0.35, 0.5)
    y0 = torch.zeros_like(base_r)
    return _prims(p, frustums=[_cyl(base_r, y0, y0 + 0.06), _cyl(y0 + 0.04, y0, pole_h),
                               _cone(shade_lo, shade_hi, pole_h - shade_h * 0.6, pole_h + shade_h * 0.4)])


def _four_legs(w: Tensor, d: Tensor, h: Tensor, leg: Tensor) -> list[Tensor]:
    zero = torch.zeros_like(w)
    legs = []
    for sx in (-1, 1):
        for sz in (-1, 1):
            cx, cz = sx * (w / 2 - leg), sz * (d / 2 - leg)
            legs.append(_box(cx - leg / 2, zero, cz - leg / 2, cx + leg / 2, h, cz + leg / 2))
    return legs


def table(p: Tensor) -> Primitives:
    w, d, h = _lerp(p[:, 0], 1.0, 1.5), _lerp(p[:, 1], 0.6, 1.0), _lerp(p[:, 2], 0.6, 0.9)
    top, leg = _lerp(p[:, 3], 0.05, 0.1), _lerp(p[:, 4], 0.06, 0.1)
    board = _box(-w / 2, h, -d / 2, w / 2, h + top, d / 2)
    return _prims(p, boxes=[board, *_four_legs(w, d, h, leg)])


def chair(p: Tensor) -> Primitives:
    w, h = _lerp(p[:, 0], 0.5, 0.7), _lerp(p[:, 1], 0.45, 0.6)
    back_h, leg = _lerp(p[:, 2], 0.5, 0.8), _lerp(p[:, 3], 0.05, 0.08)
    seat_t = _lerp(p[:, 4], 0.05, 0.09)
    seat = _box(-w / 2, h, -w / 2, w / 2, h + seat_t, w / 2)
    back = _box(-w / 2, h + seat_t, -w / 2, w / 2, h + seat_t + back_h, -w / 2 + 0.07)
    return _prims(p, boxes=[seat, back, *_four_legs(w, w, h, leg)])


def cap(p: Tensor) -> Primitives:
    r, dome = _lerp(p[:, 0], 0.4, 0.5), _lerp(p[:, 1], 0.25, 0.4)
    visor, thick = _lerp(p[:, 2], 0.25, 0.4), _lerp(p[:, 3], 0.02, 0.04)
    zero = torch.zeros_like(r)
    crown = torch.stack([r, dome, zero, zero, dome], -1)
    brim = _box(-r * 0.8, zero, zero, r * 0.8, thick, r + visor)
    return _prims(p, boxes=[brim], ellipsoids=[crown])


def vase(p: Tensor) -> Primitives:
    foot, belly, neck = _lerp(p[:, 0], 0.15, 0.25), _lerp(p[:, 1], 0.35, 0.5), _lerp(p[:, 2], 0.12, 0.2)
    low_h, high_h = _lerp(p[:, 3], 0.4, 0.7), _lerp(p[:, 4], 0.4, 0.7)
    lip = neck * _lerp(p[:, 5], 1.2, 1.6)
    y0 = torch.zeros_like(foot)
    return _prims(p, frustums=[_cone(foot, belly, y0, low_h), _cone(belly, neck, low_h, low_h + high_h),
                               _cone(neck, lip, low_h + high_h, low_h + high_h + 0.1)])


CLASSES: dict[str, Callable[[Tensor], Primitives]] = {
    "can": can, "barrel": barrel, "bowl": bowl, "mug": mug, "bottle": bottle,
    "lamp": lamp, "table": table, "chair": chair, "cap": cap, "vase": vase,
}


def _extent(prims: Primitives) -> tuple[Tensor, Tensor, Tensor]:
    """Per-object vertical range and horizontal radius: ``(ymin [G], ymax [G], rxz [G])``."""
    b, f, e = prims["boxes"], prims["frustums"], prims["ellipsoids"]
    big = torch.full(b.shape[:1], 1e9, dtype=b.dtype, device=b.device)
    ys_lo = [b[:, :, 0, 1], f[:, :, 2], e[:, :, 3]]
    ys_hi = [b[:, :, 1, 1], f[:, :, 3], e[:, :, 4]]
    rxz = [b[:, :, :, [0, 2]].norm(dim=-1).amax(-1), f[:, :, :2].amax(-1), e[:, :, 0]]
    ymin = torch.minimum(big, torch.cat(ys_lo, 1).amin(1))
    ymax = torch.maximum(-big, torch.cat(ys_hi, 1).amax(1))
    return ymin, ymax, torch.cat(rxz, 1).amax(1)


def normalise(prims: Primitives, radius: float = OBJECT_RADIUS) -> Primitives:
    """Centre objects vertically at y = 0 and scale them to bounding radius ``radius``."""
    ymin, ymax, rxz = _extent(prims)
    shift = (ymin + ymax) / 2
    scale = radius / torch.sqrt(rxz ** 2 + ((ymax - ymin) / 2) ** 2)
    b, f, e = prims["boxes"].clone(), prims["frustums"].clone(), prims["ellipsoids"].clone()
    b[..., 1] -= shift[:, None, None]
    f[..., 2:] -= shift[:, None, None]
    e[..., 2:] -= shift[:, None, None]
    return {"boxes": b * scale[:, None, None, None], "frustums": f * scale[:, None, None],
            "ellipsoids": e * scale[:, None, None]}


def build_primitives(class_name: str, proportions: Tensor) -> Primitives:
    """Normalised primitives for ``G`` instances of ``class_name`` from ``proportions`` ``[G, 6]``."""
    return normalise(CLASSES[class_name](proportions))


def union_primitives(parts: list[tuple[Tensor, Primitives]], b: int) -> tuple[Primitives, Tensor]:
    """One table of the primitives of ``b`` scenes of several classes, for one renderer call: ``parts``
    ``(members [G], primitives [G, n, ...] per kind)`` per class, each scene of ``0..b-1`` a member of one
    part -> primitives ``[b, n_max, ...]`` per kind (a scene's own in its kind's first slots, in their order;
    zeros after) and ``counts`` ``[b, 3]``: each scene's own number per kind (boxes, frustums, ellipsoids)."""
    keys = ("boxes", "frustums", "ellipsoids")
    like = parts[0][1]["boxes"]
    table = {key: like.new_zeros((b, max(p[key].shape[1] for _, p in parts), *parts[0][1][key].shape[2:]))
             for key in keys}
    owner = torch.empty(b, dtype=torch.long, device=like.device)
    for i, (members, p) in enumerate(parts):
        owner.index_fill_(0, members, i)
        for key in keys:
            if p[key].shape[1]:
                table[key][:, :p[key].shape[1]].index_copy_(0, members, p[key])
    sizes = torch.tensor([[p[key].shape[1] for key in keys] for _, p in parts], device=like.device)
    return table, sizes.index_select(0, owner)
