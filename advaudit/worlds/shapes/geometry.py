"""Closed-form ray intersection with ShapeWorld's primitives, batched over rays.

All functions take ray origins ``o`` ``[M, 3]`` and unit directions ``d`` ``[M, 3]`` and per-ray
primitive parameters gathered to ``[M, n, ...]``; they return hit distances ``[M, n]`` (``inf``
for a miss). No marching: one quadratic (or slab test) per ray and primitive.
"""

from __future__ import annotations

import torch
from torch import Tensor

EPS = 1e-4
INF = float("inf")


def length(v: Tensor) -> Tensor:
    """``|v|`` ``[...]`` of vectors ``v`` ``[..., 3]``, component by component in a fixed order: a vector's length
    never depends on the batch it is in (a reduction over the last dim may add its three terms in another order,
    or with a fused multiply-add, depending on where the vector falls in a vectorised loop)."""
    return (v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2]).sqrt()


def unit(v: Tensor, eps: float = 1e-12) -> Tensor:
    """``v / max(|v|, eps)`` ``[..., 3]`` (``torch.nn.functional.normalize``'s result, batch-invariant: :func:`length`)."""
    return v / length(v).clamp_min(eps)[..., None]


def _safe(x: Tensor, eps: float = 1e-9) -> Tensor:
    """``x`` with magnitudes below ``eps`` replaced by ``eps`` (keeping the sign)."""
    return torch.where(x.abs() < eps, torch.full_like(x, eps).copysign(x), x)


def intersect_boxes(o: Tensor, d: Tensor, boxes: Tensor) -> Tensor:
    """Slab test. ``boxes`` ``[M, n, 2, 3]`` (low, high corners) -> ``t`` ``[M, n]``."""
    inv = 1.0 / _safe(d)[:, None]
    t0 = (boxes[:, :, 0] - o[:, None]) * inv
    t1 = (boxes[:, :, 1] - o[:, None]) * inv
    near = torch.minimum(t0, t1).amax(-1)
    far = torch.maximum(t0, t1).amin(-1)
    t = torch.where(near > EPS, near, far)
    return torch.where((far >= near) & (t > EPS), t, INF)


def _cap(o: Tensor, d: Tensor, y: Tensor, radius: Tensor, center_y: Tensor | None = None) -> Tensor:
    """Disk at height ``y`` ``[M, n]`` with ``radius`` ``[M, n]`` on the y axis -> ``t`` ``[M, n]``."""
    t = (y - o[:, None, 1]) / _safe(d[:, None, 1])
    x = o[:, None, 0] + t * d[:, None, 0]
    z = o[:, None, 2] + t * d[:, None, 2]
    return torch.where((x * x + z * z <= radius * radius) & (t > EPS), t, INF)


def _pick_roots(a: Tensor, b: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """Both roots of ``a t^2 + 2 b t + c = 0`` (NaN-free; invalid where the discriminant < 0)."""
    disc = b * b - a * c
    root = disc.clamp_min(0).sqrt()
    a = _safe(a)
    near, far = (-b - root) / a, (-b + root) / a
    valid = disc >= 0
    return torch.where(valid, torch.minimum(near, far), INF), torch.where(valid, torch.maximum(near, far), INF)


def intersect_frustums(o: Tensor, d: Tensor, frustums: Tensor) -> Tensor:
    """Capped cone segments ``(r0, r1, y0, y1)`` ``[M, n, 4]`` on the y axis -> ``t`` ``[M, n]``."""
    r0, r1, y0, y1 = frustums.unbind(-1)
    slope = (r1 - r0) / (y1 - y0).clamp_min(1e-6)
    offset = r0 - slope * y0
    ox, oy, oz = (o[:, None, i] for i in range(3))
    dx, dy, dz = (d[:, None, i] for i in range(3))
    k = offset + slope * oy
    a = dx * dx + dz * dz - slope * slope * dy * dy
    b = ox * dx + oz * dz - slope * dy * k
    c = ox * ox + oz * oz - k * k
    best = torch.full_like(r0, INF)
    for t in _pick_roots(a, b, c):
        y = oy + t * dy
        ok = (t > EPS) & (y >= y0) & (y <= y1) & (offset + slope * y >= 0)
        best = torch.minimum(best, torch.where(ok, t, INF))
    best = torch.minimum(best, _cap(o, d, y0, r0))
    return torch.minimum(best, _cap(o, d, y1, r1))


def intersect_ellipsoids(o: Tensor, d: Tensor, ellipsoids: Tensor) -> Tensor:
    """Spheroids ``(R, Ry, yc, ylo, yhi)`` ``[M, n, 5]`` clipped to ``[ylo, yhi]`` -> ``t`` ``[M, n]``."""
    r, ry, yc, ylo, yhi = ellipsoids.unbind(-1)
    squash = r / ry
    ox, oz = o[:, None, 0], o[:, None, 2]
    oy = (o[:, None, 1] - yc) * squash
    dx, dz = d[:, None, 0], d[:, None, 2]
    dy = d[:, None, 1] * squash
    a = dx * dx + dy * dy + dz * dz
    b = ox * dx + oy * dy + oz * dz
    c = ox * ox + oy * oy + oz * oz - r * r
    best = torch.full_like(r, INF)
    for t in _pick_roots(a, b, c):
        y = o[:, None, 1] + t * d[:, None, 1]
        best = torch.minimum(best, torch.where((t > EPS) & (y >= ylo) & (y <= yhi), t, INF))
    for y_cap in (ylo, yhi):
        rel = ((y_cap - yc) / ry).clamp(-1, 1)
        best = torch.minimum(best, _cap(o, d, y_cap, r * (1 - rel * rel).clamp_min(0).sqrt()))
    return best


def _box_normals(p: Tensor, params: Tensor) -> Tensor:
    """Outward unit normals ``[m, 3]`` of boxes ``params`` ``[m, 6]`` (low, high) at ``p`` ``[m, 3]``: the
    nearest face's."""
    dist = torch.cat([(p - params[:, :3]).abs(), (p - params[:, 3:6]).abs()], -1)  # [m, 6] distance to each face
    face = dist.argmin(-1)
    nb = torch.zeros_like(p)
    nb[torch.arange(len(p), device=p.device), face % 3] = torch.where(face < 3, -1.0, 1.0)
    return nb


def _frustum_normals(p: Tensor, params: Tensor) -> Tensor:
    """Outward (unnormalised) normals ``[m, 3]`` of frustums ``params`` ``[m, >=4]`` (r0, r1, y0, y1) at ``p``."""
    x, y, z = p.unbind(-1)
    r0, r1, y0, y1 = params[:, :4].unbind(-1)
    slope = (r1 - r0) / (y1 - y0).clamp_min(1e-6)
    radius = r0 + slope * (y - y0)
    return _cap_or_side(y, y0, y1, torch.stack([x, -slope * radius, z], -1))


def _ellipsoid_normals(p: Tensor, params: Tensor) -> Tensor:
    """Outward (unnormalised) normals ``[m, 3]`` of clipped spheroids ``params`` ``[m, >=5]`` at ``p``."""
    x, y, z = p.unbind(-1)
    r, ry, yc, ylo, yhi = params[:, :5].unbind(-1)
    side = torch.stack([x / r ** 2, (y - yc) / ry ** 2, z / r ** 2], -1)
    return _cap_or_side(y, ylo, yhi, side)


_NORMALS = (_box_normals, _frustum_normals, _ellipsoid_normals)


def normals(p: Tensor, kind: Tensor, params: Tensor, kinds: list[int] | None = None) -> Tensor:
    """Outward unit normals ``[M, 3]`` at hit points ``p`` ``[M, 3]``.

    ``kind`` ``[M]``: 0 box, 1 frustum, 2 ellipsoid; ``params`` ``[M, 6]`` the hit primitive's
    parameters (box: low xyz, high xyz; frustum: r0, r1, y0, y1; ellipsoid: R, Ry, yc, ylo, yhi).
    ``kinds``: the kinds that can occur (where the caller knows; one kind needs no sorting of the points).
    """
    present = sorted(set(kinds)) if kinds is not None else [k for k in range(3) if bool((kind == k).any())]
    if len(present) == 1:
        return unit(_NORMALS[present[0]](p, params))
    n = torch.zeros_like(p)
    for k in present:
        rows = (kind == k).nonzero().squeeze(1)
        if len(rows):
            n.index_copy_(0, rows, _NORMALS[k](p.index_select(0, rows), params.index_select(0, rows)))
    return unit(n)


def _cap_or_side(y: Tensor, y0: Tensor, y1: Tensor, side: Tensor) -> Tensor:
    """``side`` ``[m, 3]``, or the cap's normal (0, -1, 0) / (0, 1, 0) where ``y`` is at ``y0`` / ``y1``."""
    tol = 2e-4 * (y1 - y0).abs().clamp_min(1.0)
    down, up = (y - y0).abs() < tol, (y - y1).abs() < tol
    axis = torch.tensor([0.0, 1.0, 0.0], dtype=side.dtype, device=side.device)
    return torch.where(up[:, None], axis, torch.where(down[:, None], -axis, side))
