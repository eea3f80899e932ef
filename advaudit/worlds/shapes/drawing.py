"""Which renderer calls draw a batch of ShapeWorld scenes: its classes in turn, packed into chunks of whole
classes, each chunk one :func:`~advaudit.worlds.shapes.renderer.render_scenes` call (on a union table of
primitives, :func:`~advaudit.worlds.shapes.catalogue.union_primitives`, where it holds several classes).

Every packing draws the same pixels, bit for bit (a pixel depends on its scene only, and a scene's own
primitive slots keep their order in a union table); the packing only sets the speed: a call costs ~1,000
small torch ops whatever its size, but one call's element-wise passes over the rays of many scenes run
slower than in smaller calls (:func:`~advaudit.worlds.shapes.world.scenes_per_call`).
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import Tensor

from advaudit.worlds.shapes.catalogue import build_primitives, union_primitives
from advaudit.worlds.shapes.renderer import render_scenes

Groups = list[tuple[str, Tensor]]


def chunks(groups: Groups, per: int) -> Iterator[Groups]:
    """The classes of ``groups`` (``(class name, members [G] ascending)`` each) in turn, packed into chunks of at
    most ``per`` scenes each (a class with more has a chunk of its own; ``per`` = 0: one class per chunk)."""
    chunk, scenes = [], 0
    for group in groups:
        if chunk and scenes + len(group[1]) > per:
            yield chunk
            chunk, scenes = [], 0
        chunk.append(group)
        scenes += len(group[1])
    if chunk:
        yield chunk


def draw(groups: Groups, data: dict[str, Tensor], s: Tensor, size: int, shadows: bool, per: int,
         output: str, out: tuple[Tensor | None, Tensor | None]) -> None:
    """Draw the scenes ``s`` ``[B, F]`` (instance ``data`` ``[B, ...]`` each: proportions, albedo, specular,
    shininess) of ``groups`` (their members together ``0..B-1``) into ``out``: images ``[B, 3, size, size]``
    and/or masks ``[B, size, size]`` (``output``: image, mask or both; the other None), one renderer call per
    :func:`chunks` of ``per`` scenes."""
    for chunk in chunks(groups, per):
        _draw_chunk(chunk, data, s, size, shadows, output, out)


def _draw_chunk(chunk: Groups, data: dict[str, Tensor], s: Tensor, size: int, shadows: bool, output: str,
                out: tuple[Tensor | None, Tensor | None]) -> None:
    """One renderer call for the scenes of ``chunk``; drawn in place where they are consecutive."""
    order = chunk[0][1] if len(chunk) == 1 else torch.cat([members for _, members in chunk])
    first, n = int(order[0]), len(order)
    # one class's members ascend, so they are consecutive where the last is n - 1 after the first
    consecutive = (int(order[-1]) - first + 1 == n if len(chunk) == 1
                   else bool((order == torch.arange(first, first + n, device=order.device)).all()))
    take = (lambda x: x[first:first + n]) if consecutive else (lambda x: x.index_select(0, order))
    if len(chunk) == 1:
        prims, counts = build_primitives(chunk[0][0], take(data["proportions"])), None
    else:
        parts, offset = [], 0
        for name, members in chunk:
            block = torch.arange(offset, offset + len(members), device=order.device)
            parts.append((block, build_primitives(name, data["proportions"].index_select(0, members))))
            offset += len(members)
        prims, counts = union_primitives(parts, n)
    flags = {"return_mask": output == "mask", "with_mask": output == "both", "counts": counts}
    args = (prims, take(data["albedo"]), take(data["specular"]), take(data["shininess"]), take(s), size, shadows)
    if consecutive:
        render_scenes(*args, out=tuple(None if x is None else x[first:first + n] for x in out), **flags)
        return
    drawn = render_scenes(*args, **flags)
    for whole, part in zip([x for x in out if x is not None], drawn if output == "both" else (drawn,)):
        whole.index_copy_(0, order, part)
