"""Ray casting against each primitive only where the ray can meet it: per-primitive bounding spheres.

An object is a few primitives (a table: a board and four legs); a ray through the object's bounding
sphere meets most of them nowhere. Each primitive *slot* (kind and index within the class, the same
for every scene of one call) gets a bounding sphere per scene; a ray is tested against a slot's
primitive only where its line passes within that sphere, on the compacted rays that do. The test is
conservative (the sphere is inflated well past float rounding), so the hit distances are those of
testing every primitive: the same closed-form expressions on the same numbers.

A call may hold several classes (a union table: each kind has as many slots as the most any class has);
a scene's missing slots have spheres no ray passes within, and where the rays come scene by scene
(``Rays.runs``) and each slot's scenes in runs (``Slots.spans``), a slot is tested only on their rays.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import Tensor

from advaudit.worlds.shapes.catalogue import Primitives
from advaudit.worlds.shapes.geometry import INF, intersect_boxes, intersect_ellipsoids, intersect_frustums

KINDS = (("boxes", intersect_boxes), ("frustums", intersect_frustums), ("ellipsoids", intersect_ellipsoids))
# a ray whose line passes farther than (1 + REL) r + ABS from a primitive's bounding-sphere centre cannot meet it
_REL, _ABS = 1e-3, 1e-3


@dataclass
class Slots:
    """The primitives of ``B`` scenes, slot by slot (kinds in :data:`KINDS` order): of one class, or of
    several (a union table, :func:`slot_table` with ``counts``: a scene without a slot has a bounding sphere
    that no ray passes within, so its padded parameters are never read).

    ``kind`` and ``index``: each slot's kind (0 box, 1 frustum, 2 ellipsoid) and index within its kind;
    ``centre`` ``[3, S, B]`` (x, y, z), ``centre2`` ``[S, B]`` (squared length) and ``radius2`` ``[S, B]``:
    each primitive's (inflated) bounding sphere; ``params`` ``[B * S, 6]``: its parameters, zero-padded
    (row ``scene * S + slot``); ``spans``: per slot, the runs ``[first, end)`` of consecutive scenes that
    have it (None: every scene has every slot)."""

    prims: Primitives
    kind: list[int]
    index: list[int]
    centre: Tensor
    centre2: Tensor
    radius2: Tensor
    params: Tensor
    spans: list[list[tuple[int, int]]] | None = None

    def __len__(self) -> int:
        return len(self.kind)


class Rays:
    """Rays ``o``, ``d`` ``[M, 3]`` (unit directions) of scenes ``obj`` ``[M]``, with what the culling test
    reads (computed when first read): their components ``oc``, ``dc`` ``[3, M]``, ``o . d`` and ``|o|^2``
    ``[M]``."""

    def __init__(self, o: Tensor, d: Tensor, obj: Tensor, od: Tensor | None = None,
                 origin: Tensor | None = None, runs: list[int] | None = None) -> None:
        """``od``: ``o . d`` where known; ``origin`` ``[B, 3]``: each scene's one origin where all its rays
        start there (camera rays); ``runs``: ``[0, ..., M]``, bounds of runs of rays whose ``obj`` ascends
        (None: in no known order), so that a slot only some scenes have is tested on their rays only."""
        self.o, self.d, self.obj, self.origin, self.runs = o, d, obj, origin, runs
        self._ranges: tuple[Slots, list[list[tuple[int, int]]]] | None = None
        if od is not None:
            self.od = od

    def ranges(self, slots: Slots, slot: int) -> list[tuple[int, int]]:
        """Ranges ``[lo, hi)`` of the rays of the scenes with ``slot`` (with ``slots.spans`` and ``runs``;
        else every ray), found for all slots at the first call (one search per run)."""
        if slots.spans is None or self.runs is None:
            return [(0, len(self.obj))]
        if self._ranges is None or self._ranges[0] is not slots:
            scenes = torch.tensor([b for spans in slots.spans for span in spans for b in span], device=self.obj.device)
            found = [(torch.searchsorted(self.obj[a:b], scenes) + a).tolist()
                     for a, b in zip(self.runs[:-1], self.runs[1:])]
            ranges, at = [], 0
            for spans in slots.spans:
                ranges.append([(bounds[i], bounds[i + 1]) for bounds in found
                               for i in range(at, at + 2 * len(spans), 2) if bounds[i + 1] > bounds[i]])
                at += 2 * len(spans)
            self._ranges = (slots, ranges)
        return self._ranges[1][slot]

    @functools.cached_property
    def oc(self) -> Tensor:
        return self.o.t().contiguous()

    @functools.cached_property
    def dc(self) -> Tensor:
        return self.d.t().contiguous()

    @functools.cached_property
    def od(self) -> Tensor:
        return self.oc[0] * self.dc[0] + self.oc[1] * self.dc[1] + self.oc[2] * self.dc[2]

    @functools.cached_property
    def oo(self) -> Tensor:
        return self.oc[0] * self.oc[0] + self.oc[1] * self.oc[1] + self.oc[2] * self.oc[2]


def _spheres(key: str, p: Tensor) -> tuple[Tensor, Tensor]:
    """Bounding spheres of primitives ``p`` ``[B, n, ...]`` of kind ``key``: centres ``[B, n, 3]``, radii ``[B, n]``."""
    if key == "boxes":                                        # (low, high) corners
        return (p[:, :, 0] + p[:, :, 1]) / 2, ((p[:, :, 1] - p[:, :, 0]) / 2).norm(dim=-1)
    if key == "frustums":                                     # (r0, r1, y0, y1) on the y axis
        across, low, high = p[..., :2].abs().amax(-1), p[..., 2], p[..., 3]
    else:                                                     # (R, Ry, yc, ylo, yhi), clipped to [ylo, yhi]
        across, low, high = p[..., 0].abs(), p[..., 3], p[..., 4]
    zero = torch.zeros_like(low)
    centre = torch.stack([zero, (low + high) / 2, zero], -1)
    return centre, torch.sqrt(across ** 2 + ((high - low) / 2) ** 2)


def slot_table(prims: Primitives, counts: Tensor | None = None) -> Slots:
    """Every primitive slot of ``prims`` (``[B, n, ...]`` per kind) with its bounding spheres and parameters.

    ``counts`` ``[B, 3]``: how many of the kind's slots (in :data:`KINDS` order) scene ``b`` has, the others
    being padding (None: every scene has every slot). A padded slot's bounding sphere has ``radius2 = -inf``:
    no ray's line passes within it, so :func:`nearest` and :func:`blocked` never test it, and each scene's
    own slots keep their order (ties: the first of them)."""
    kinds, indices, centres, radii, params = [], [], [], [], []
    for kind, (key, _) in enumerate(KINDS):
        p = prims[key]
        if p.shape[1] == 0:
            continue
        centre, radius = _spheres(key, p)
        kinds += [kind] * p.shape[1]
        indices += list(range(p.shape[1]))
        centres.append(centre)
        radii.append(radius)
        flat = p.reshape(p.shape[0], p.shape[1], -1)
        params.append(torch.nn.functional.pad(flat, (0, 6 - flat.shape[-1])))
    b = len(prims["boxes"])
    centre = torch.cat(centres, 1).permute(2, 1, 0).contiguous()                 # [3, S, B]
    radius = (torch.cat(radii, 1) * (1 + _REL) + _ABS).t().contiguous()          # [S, B]
    radius2, spans = radius * radius, None
    if counts is not None:
        present = torch.tensor(indices, device=counts.device)[:, None] < counts.t()[kinds]     # [S, B]
        radius2 = radius2.masked_fill(~present, -INF)
        row, at = torch.nn.functional.pad(present.int(), (1, 1)).diff(dim=1).nonzero(as_tuple=True)
        spans = [[] for _ in kinds]                                 # a run starts at +1 and ends at -1, in turn
        for slot, first, end in zip(row[0::2].tolist(), at[0::2].tolist(), at[1::2].tolist()):
            spans[slot].append((first, end))
    return Slots(prims, kinds, indices, centre, (centre * centre).sum(0), radius2,
                 torch.cat(params, 1).reshape(b * len(kinds), 6), spans)


def _near(slots: Slots, slot: int, r: Rays) -> Tensor:
    """Indices ``[m]`` (ascending) of the rays ``r`` whose line passes within ``slot``'s bounding sphere (a
    test that only culls: its rounding is far inside the sphere's inflation), among :meth:`Rays.ranges`."""
    found = [_near_within(slots, slot, r, lo, hi) for lo, hi in r.ranges(slots, slot)]
    if len(found) == 1:
        return found[0]
    return torch.cat(found) if found else r.obj.new_zeros(0)


def _near_within(slots: Slots, slot: int, r: Rays, lo: int, hi: int) -> Tensor:
    """:func:`_near` among the rays ``lo <= i < hi``: indices ``[m]`` into ``r``."""
    axes = (1,) if slots.kind[slot] else (0, 1, 2)                # frustums and ellipsoids sit on the y axis
    cut = (lambda x: x) if lo == 0 and hi == len(r.obj) else (lambda x: x[..., lo:hi])
    obj = cut(r.obj)
    c = [slots.centre[a, slot].index_select(0, obj) for a in axes]
    along = cut(r.od)
    for a, ca in zip(axes, c):
        along = along - ca * cut(r.dc[a])
    if r.origin is not None:                                       # |o - c|^2 per scene
        oc = ((r.origin - slots.centre[:, slot].t()) ** 2).sum(-1).index_select(0, obj)
    else:
        oc = cut(r.oo) + slots.centre2[slot].index_select(0, obj)
        for a, ca in zip(axes, c):
            oc = oc - 2 * ca * cut(r.oc[a])
    near = (oc - along * along <= slots.radius2[slot].index_select(0, obj)).nonzero().squeeze(1)
    return near if lo == 0 else near + lo


def _distance(slots: Slots, slot: int, r: Rays, rays: Tensor | None) -> Tensor:
    """Hit distances ``[m]`` of the rays ``rays`` ``[m]`` of ``r`` (None: all) with ``slot``'s primitive."""
    key, intersect = KINDS[slots.kind[slot]]
    obj = r.obj if rays is None else r.obj.index_select(0, rays)
    if key == "frustums":  # its many reads of single components run faster on contiguous components
        o, d = (r.oc, r.dc) if rays is None else (r.oc.index_select(1, rays), r.dc.index_select(1, rays))
        o, d = o.t(), d.t()
    else:
        o, d = (r.o, r.d) if rays is None else (r.o.index_select(0, rays), r.d.index_select(0, rays))
    return intersect(o, d, slots.prims[key][:, slots.index[slot]].index_select(0, obj)[:, None])[:, 0]


def nearest(slots: Slots, r: Rays) -> tuple[Tensor, Tensor]:
    """Nearest hit of rays ``r``: distance ``[M]`` (``inf`` for a miss) and the hit slot ``[M]`` (the first
    slot among equally near ones)."""
    best_t = torch.full((len(r.o),), INF, dtype=r.o.dtype, device=r.o.device)
    best_slot = torch.zeros(len(r.o), dtype=torch.long, device=r.o.device)
    first = True
    for slot in range(len(slots)):
        if len(slots) == 1:  # one primitive (every scene has one): its sphere is the object's, which the rays meet
            return _distance(slots, slot, r, None), best_slot
        rays = _near(slots, slot, r)
        if len(rays) == 0:
            continue
        t = _distance(slots, slot, r, rays)
        # before the first tested slot every distance so far is inf (no need to read it back)
        closer = (t < (INF if first else best_t.index_select(0, rays))).nonzero().squeeze(1)
        rays = rays.index_select(0, closer)
        best_t.index_copy_(0, rays, t.index_select(0, closer))
        if slot:  # slot 0 is the default
            best_slot.index_fill_(0, rays, slot)
        first = False
    return best_t, best_slot


def blocked(slots: Slots, r: Rays, limit: Tensor) -> Tensor:
    """Whether rays ``r`` meet a primitive nearer than ``limit`` ``[M]``: bool ``[M]`` (the nearest hit is
    nearer than the limit iff one hit is)."""
    out = torch.zeros(len(r.o), dtype=torch.bool, device=r.o.device)
    for slot in range(len(slots)):
        rays = _near(slots, slot, r)
        if len(rays) == 0:
            continue
        t = _distance(slots, slot, r, rays)
        out.index_fill_(0, rays.masked_select(t < limit.index_select(0, rays)), True)
    return out
