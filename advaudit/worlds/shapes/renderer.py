"""Batched ray casting of ShapeWorld scenes: pinhole camera, Lambert + Blinn-Phong shading, a
sun and a point light with (optional) shadow rays, and a sky-gradient background.

Speed comes from closed-form intersections (no marching); every ray's projection on the camera
(the object's bounding-sphere test) and the sky's height come from three multiply-adds over the
pixel grid, and the directions only for the rays that meet an object's bounding sphere (compaction
with ``nonzero``); each primitive is then intersected only with the rays whose line passes within
its own bounding sphere (``culling``), shadow rays included; each call evaluates only the primitives
of the object classes it renders, and several classes share one call (a union table of primitives:
``drawing``), the rays coming scene by scene so that a primitive slot is tested on the rays of the
scenes that have it only; objects made of one convex primitive cast no shadow rays (they cannot shadow
themselves), per scene; lights are computed once per scene; the image is written channel-first, so
there is no final transpose. Every change of these kept the images bit-identical.
"""

from __future__ import annotations

import functools
import itertools
import math

import torch
from torch import Tensor

from advaudit.worlds.shapes.catalogue import OBJECT_RADIUS, Primitives
from advaudit.worlds.shapes.culling import KINDS, Rays, Slots, blocked, nearest, slot_table
from advaudit.worlds.shapes.geometry import INF, length, normals, unit

FOV_DEGREES = 50.0
AMBIENT = 0.15
SKY = (0.62, 0.68, 0.78)
GROUND = (0.36, 0.33, 0.30)


def _deg(x: Tensor) -> Tensor:
    return x * (math.pi / 180.0)


def spherical(distance: Tensor, azimuth_deg: Tensor, elevation_deg: Tensor) -> Tensor:
    """Points ``[B, 3]`` at ``distance`` in direction (azimuth around y, elevation from the xz plane)."""
    az, el = _deg(azimuth_deg), _deg(elevation_deg)
    return distance[:, None] * torch.stack([el.cos() * az.sin(), el.sin(), el.cos() * az.cos()], -1)


def camera_basis(distance: Tensor, azimuth: Tensor, elevation: Tensor, roll: Tensor) -> tuple[Tensor, Tensor]:
    """Origins ``[B, 3]`` and the orthonormal camera basis ``[B, 3, 3]`` (rows: right, up, forward)
    of an orbit camera aimed at 0."""
    origin = spherical(distance, azimuth, elevation)
    forward = -unit(origin)
    az = _deg(azimuth)
    right = torch.stack([az.cos(), torch.zeros_like(az), -az.sin()], -1)  # never degenerate
    up = torch.cross(right, forward, dim=-1)
    r = _deg(roll)[:, None]
    right, up = r.cos() * right + r.sin() * up, -r.sin() * right + r.cos() * up
    return origin, torch.stack([right, up, forward], 1)


@functools.lru_cache(maxsize=8)
def pixel_grid(size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """Per pixel ``[size*size, 3]``: ``(u, v, 1) / |(u, v, 1)|`` in camera coordinates (row-major,
    top row first). The basis is orthonormal, so ``grid @ basis`` is already a unit direction.
    Cached per size (read-only: callers never write into it)."""
    scale = math.tan(math.radians(FOV_DEGREES) / 2)
    axis = (torch.arange(size, dtype=dtype, device=device) + 0.5) / size * 2 - 1
    v, u = torch.meshgrid(-axis * scale, axis * scale, indexing="ij")
    grid = torch.stack([u.reshape(-1), v.reshape(-1), torch.ones(size * size, dtype=dtype, device=device)], -1)
    return grid / grid.norm(dim=-1, keepdim=True)


@functools.lru_cache(maxsize=8)
def pixel_grid_components(size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """:func:`pixel_grid` components first, ``[3, size*size]`` (contiguous: what the per-channel
    multiply-adds read). Cached per size (read-only)."""
    return pixel_grid(size, dtype, device).t().contiguous()


def euler_direction(ax: Tensor, ay: Tensor, az: Tensor) -> Tensor:
    """Direction ``[B, 3]`` *towards* a sun whose rotation (XYZ Euler, degrees) turns a light
    shining straight down."""
    a, b, c = _deg(ax), _deg(ay), _deg(az)
    down = torch.tensor([0.0, -1.0, 0.0], dtype=a.dtype, device=a.device).expand(len(a), 3)
    x = torch.stack([down[:, 0], a.cos() * down[:, 1] - a.sin() * down[:, 2],
                     a.sin() * down[:, 1] + a.cos() * down[:, 2]], -1)
    y = torch.stack([b.cos() * x[:, 0] + b.sin() * x[:, 2], x[:, 1],
                     -b.sin() * x[:, 0] + b.cos() * x[:, 2]], -1)
    z = torch.stack([c.cos() * y[:, 0] - c.sin() * y[:, 1], c.sin() * y[:, 0] + c.cos() * y[:, 1], y[:, 2]], -1)
    return -z


def _visibility(p: Tensor, n: Tensor, obj: Tensor, lights: list[tuple[Tensor, Tensor]], slots: Slots,
                casts: Tensor | None = None) -> list[Tensor]:
    """Per light, 1 where the light reaches ``p`` ``[M, 3]`` (normal ``n``, scenes ``obj`` ``[M]``) unblocked,
    else 0.

    ``lights``: ``(direction [M, 3], distance [M])`` pairs. Only points facing a light cast a
    shadow ray towards it (the others are dark anyway), all in one pass over the primitives; with
    ``casts`` ``[M]`` bool, only the points where it is True (the others are lit).
    """
    start = p + n * 1e-3
    facing = [((_dot(n, direction) > 0) if casts is None else (_dot(n, direction) > 0) & casts).nonzero().squeeze(1)
              for direction, _ in lights]
    rows = torch.cat(facing)
    dirs = torch.cat([direction.index_select(0, f) for f, (direction, _) in zip(facing, lights)])
    limits = torch.cat([distance.index_select(0, f) for f, (_, distance) in zip(facing, lights)])
    runs = [0, *itertools.accumulate(len(f) for f in facing)]    # each light's rays ascend by scene, as ``obj``
    shadowed = blocked(slots, Rays(start.index_select(0, rows), dirs, obj.index_select(0, rows), runs=runs), limits)
    out, offset = [], 0
    for f in facing:
        lit = torch.ones(len(p), dtype=p.dtype, device=p.device)
        lit[f] = (~shadowed[offset: offset + len(f)]).to(p.dtype)
        out.append(lit)
        offset += len(f)
    return out


def _dot(a: Tensor, b: Tensor) -> Tensor:
    """``(a * b).sum(-1)`` ``[M]`` of ``a``, ``b`` ``[M, 3]``, column by column and added in the same order
    (so the same numbers), without a reduction over rows of 3."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


_POW_LANES = 64      # a multiple of every CPU vector loop's block (two vectors of 16 floats with AVX-512)
_POW_BLOCK = 16384   # elements per call: below PyTorch's parallel grain (32768), so no call is split across threads


def _pow(base: Tensor, exponent: Tensor) -> Tensor:
    """``base ** exponent`` ``[M]`` with every value independent of the batch it is in. PyTorch's CPU loop computes
    the last ``M mod 2 x lanes`` elements of a tensor with the scalar ``pow`` and the others with the vectorised one,
    which differ in the last bit now and then, so a pixel's colour depended on how many pixels were shaded with
    it (a shard of an examination rendered other images than one job). Here every element takes the vectorised
    path: blocks of :data:`_POW_BLOCK`, each padded to a multiple of :data:`_POW_LANES`."""
    parts = []
    for start in range(0, len(base), _POW_BLOCK):
        b, e = base[start:start + _POW_BLOCK], exponent[start:start + _POW_BLOCK]
        pad = -len(b) % _POW_LANES
        parts.append((torch.cat([b, b.new_ones(pad)]) ** torch.cat([e, e.new_ones(pad)]))[:len(b)])
    return torch.cat(parts) if parts else base ** exponent


def _can_shadow_itself(prims: Primitives) -> bool:
    """False for a single convex primitive (every ShapeWorld primitive is convex): a point on it that
    faces a light sees the light (the body lies behind its tangent plane), so shadow rays would
    find nothing."""
    return sum(prims[key].shape[1] for key, _ in KINDS) > 1


def _casters(prims: Primitives, counts: Tensor | None, shadows: bool) -> Tensor | bool:
    """Which scenes cast shadow rays: every one (True), none (False), or those of a union table (``counts``
    ``[B, 3]``, :func:`~advaudit.worlds.shapes.culling.slot_table`) made of several primitives, ``[B]`` bool
    (:func:`_can_shadow_itself` per scene: a shadow ray from a single primitive finds nothing but, now and
    then, a rounding hit on that primitive itself, which would change the pixel)."""
    if not shadows or not _can_shadow_itself(prims):
        return False
    if counts is None:
        return True
    several = counts.sum(1) > 1
    return True if bool(several.all()) else (several if bool(several.any()) else False)


def _ray_channel(grid_t: Tensor, columns: Tensor, channel: int) -> Tensor:
    """One channel ``[B', P]`` of the rays ``grid @ columns`` for pixel directions ``grid_t`` ``[3, P]``
    (components first) and cameras ``columns`` ``[B', 3, 4]`` (channels 0-2: direction, 3: projection
    on the origin).

    Three multiply-adds, not a matmul, in a fixed order: a pixel's value never depends on the
    batch it is in nor on which pixels are computed with it (``addcmul`` rounds once, in every layout)."""
    c = columns[..., channel]
    return (c[:, 0:1] * grid_t[0]).addcmul_(c[:, 1:2], grid_t[1]).addcmul_(c[:, 2:3], grid_t[2])


def _candidates(grid_t: Tensor, columns: Tensor, origin: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Pixels whose ray meets an object's bounding sphere: ``pix`` and ``obj`` ``[M]`` (scene-major), their
    unit directions ``[M, 3]`` and their projections on the camera's position ``[M]``. Only the projection
    channel is computed over the whole grid ``grid_t`` ``[3, HW]`` (:func:`pixel_grid_components`); the
    directions only for the candidates (the same multiply-adds, so the same values)."""
    od = _ray_channel(grid_t, columns, 3)                                    # [B, HW]
    # the ray's closest approach to the centre, |o|^2 - od^2, is within the sphere where od <= -sqrt(|o|^2 - r^2)
    reach = -((origin * origin).sum(-1) - OBJECT_RADIUS ** 2 * 1.0001).clamp_min(0).sqrt()     # [B]
    obj, pix = (od <= reach[:, None]).nonzero(as_tuple=True)
    g = [grid_t[j].index_select(0, pix) for j in range(3)]                   # [M] each
    c = columns[:, :, :3].permute(1, 2, 0).contiguous()                      # [3, 3, B]: c[j, k] per camera
    d = [(g[0] * c[0, k].index_select(0, obj)).addcmul_(g[1], c[1, k].index_select(0, obj))
         .addcmul_(g[2], c[2, k].index_select(0, obj)) for k in range(3)]
    return pix, obj, torch.stack(d, 1), od.view(-1).index_select(0, obj * od.shape[1] + pix)


def _background(grid_t: Tensor, columns: Tensor, out: Tensor | None = None) -> Tensor:
    """The sky gradient ``[B, 3, HW]`` (by each ray's height) for the pixel grid ``grid_t`` ``[3, HW]``
    (:func:`pixel_grid_components`), written into ``out`` where given."""
    sky = torch.tensor(SKY, dtype=grid_t.dtype, device=grid_t.device)
    ground = torch.tensor(GROUND, dtype=grid_t.dtype, device=grid_t.device)
    weight = 0.5 + 0.5 * _ray_channel(grid_t, columns, 1)                   # [B, HW]
    return torch.addcmul(ground[None, :, None], weight[:, None], (sky - ground)[None, :, None], out=out)


def _lights(s: Tensor) -> dict[str, Tensor]:
    """Each scene's lights from its factors ``s`` ``[B, 12]``: the direction towards the sun and the point
    light's position ``[B, 3]``, and their powers ``[B]`` (computed once per scene, gathered per pixel)."""
    s = s.unbind(1)
    return {"to_sun": euler_direction(s[0], s[1], s[2]), "light": spherical(s[5], s[6], s[7]),
            "sun_power": s[3] * 0.2, "light_power": s[4] * 0.8 * (10.0 / s[5]) ** 2}


def _shade(p: Tensor, n: Tensor, d: Tensor, obj: Tensor, scene: dict, visibility) -> Tensor:
    """Colours ``[M, 3]`` of hit points ``p`` with normals ``n`` seen along ``d`` (all ``[M, 3]``),
    lit by scene ``obj``'s sun and point light (``scene``: its :func:`_lights`, albedo, specular and
    shininess); ``visibility(to_sun, to_light, light_dist)`` gives the two lit factors ``[M]`` (or
    ``None`` for no shadows)."""
    lights = {key: value.index_select(0, obj) for key, value in scene["lights"].items()}
    to_sun, sun_power, light_power = lights["to_sun"], lights["sun_power"], lights["light_power"]
    to_light = lights["light"] - p
    light_dist = length(to_light)
    to_light = to_light / light_dist[:, None]
    lit = visibility(to_sun, to_light, light_dist)
    lit_sun, lit_light = lit if lit is not None else (torch.ones_like(light_dist),) * 2
    diffuse = (AMBIENT + sun_power * _dot(n, to_sun).clamp_min(0) * lit_sun
               + light_power * _dot(n, to_light).clamp_min(0) * lit_light)
    view = -d
    shine = scene["shininess"].index_select(0, obj)
    half_sun = unit(to_sun + view)
    half_light = unit(to_light + view)
    spec = scene["specular"].index_select(0, obj) * (
        sun_power * lit_sun * _pow(_dot(n, half_sun).clamp_min(0), shine)
        + light_power * lit_light * _pow(_dot(n, half_light).clamp_min(0), shine))
    return (scene["albedo"].index_select(0, obj) * diffuse[:, None] + spec[:, None]).clamp(0, 1)


def render_scenes(prims: Primitives, albedo: Tensor, specular: Tensor, shininess: Tensor,
                  s: Tensor, size: int, shadows: bool = True, return_mask: bool = False,
                  with_mask: bool = False, out: tuple[Tensor | None, Tensor | None] = (None, None),
                  counts: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """Render ``B`` scenes, one object each.

    Args:
        prims: per-image primitives (``[B, n, ...]`` each, see ``catalogue``): of one class, or of several
            padded to a union table (:func:`~advaudit.worlds.shapes.catalogue.union_primitives`) with ``counts``
            ``[B, 3]`` each scene's own number of primitives per kind (the same pixels as one call per class).
        albedo: ``[B, 3]`` diffuse colour; specular ``[B]`` strength; shininess ``[B]`` exponent.
        s: ``[B, 12]`` factors in units: sun rotation x/y/z (deg), sun energy, point-light energy,
            distance, azimuth (deg), elevation (deg), camera distance, azimuth, elevation, roll (deg).
        size: output side in pixels.
        out: contiguous tensors to draw the images ``[B, 3, size, size]`` and masks ``[B, size, size]`` into
            (either may be None: new ones).
    Returns:
        ``[B, 3, size, size]`` images in [0, 1] (or ``[B, size, size]`` object masks when
        ``return_mask``; both, as ``(images, masks)``, from the same pass when ``with_mask``).
    """
    b, hw = len(s), size * size
    origin, basis = camera_basis(s[:, 8], s[:, 9], s[:, 10], s[:, 11])
    # each camera's columns: direction (3) and projection on the origin (1, bounding-sphere test)
    columns = torch.cat([basis, basis @ origin[:, :, None]], -1)             # [B, 3, 4]
    grid_t = pixel_grid_components(size, s.dtype, s.device)                  # [3, HW]
    out_image, out_mask = out
    mask = (torch.zeros(b, hw, dtype=torch.bool, device=s.device) if out_mask is None
            else out_mask.view(b, hw).zero_())
    image = None if return_mask else (torch.empty(b, 3, hw, dtype=s.dtype, device=s.device) if out_image is None
                                      else out_image.view(b, 3, hw))        # [B, 3, HW]
    scene = {"slots": slot_table(prims, counts), "origin": origin, "lights": _lights(s), "albedo": albedo,
             "specular": specular, "shininess": shininess, "cast": _casters(prims, counts, shadows)}
    if image is not None:
        _background(grid_t, columns, out=image)
    pix, obj, d, od = _candidates(grid_t, columns, origin)
    if len(obj):
        _draw(scene, obj, pix, d, od, mask, image)
    if return_mask:
        return mask.view(b, size, size)
    images = image.view(b, 3, size, size)
    return (images, mask.view(b, size, size)) if with_mask else images


def _draw(scene: dict, obj: Tensor, pix: Tensor, d: Tensor, od: Tensor, mask: Tensor, image: Tensor | None) -> None:
    """Cast the rays of pixels ``pix`` of scenes ``obj`` (``[M]`` each) along ``d`` ``[M, 3]`` (their
    projections on the camera's position ``od`` ``[M]``): set ``mask``
    ``[B, HW]`` where they hit the object and write the hit pixels' colours into ``image`` ``[B, 3, HW]``."""
    slots = scene["slots"]
    o = scene["origin"].index_select(0, obj)
    t, slot = nearest(slots, Rays(o, d, obj, od=od, origin=scene["origin"], runs=[0, len(obj)]))
    hit = torch.isfinite(t).nonzero().squeeze(1)  # indices: index_select is cheaper than masking
    obj, pix, o, d, t, slot = (x.index_select(0, hit) for x in (obj, pix, o, d, t, slot))
    mask.view(-1).index_fill_(0, obj * mask.shape[1] + pix, True)
    if image is None:
        return
    p = o + t[:, None] * d
    kind = torch.tensor(slots.kind, device=slot.device).index_select(0, slot)
    n = normals(p, kind, slots.params.index_select(0, obj * len(slots) + slot), slots.kind)
    n = torch.where(_dot(n, d)[:, None] > 0, -n, n)  # face the camera

    cast = scene["cast"]

    def visibility(to_sun: Tensor, to_light: Tensor, light_dist: Tensor) -> list[Tensor] | None:
        if cast is False:
            return None
        casts = None if cast is True else cast.index_select(0, obj)
        return _visibility(p, n, obj, [(to_sun, torch.full_like(t, INF)), (to_light, light_dist)], slots, casts)

    image[obj, :, pix] = _shade(p, n, d, obj, scene, visibility)
