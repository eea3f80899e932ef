"""Where in a world's space S a reference judge is right, and the box it is right in often enough.

Used to choose a world's default bounds: render random conditions, judge each with a strong
reference model, then keep the box (outer bins of factors dropped) where the reference is
confidently right on a target share of the renders. Choose the box on one set of renders and
measure it on another: the share on the set it was chosen on is biased upwards.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from advaudit.core.intervals import bootstrap_ci


def share_over_instances(passed: Tensor, instance: Tensor) -> dict[str, float]:
    """Share of True in ``passed`` ``[M]`` (bool), with a 95% bootstrap interval over the instances
    (``instance`` ``[M]``: the renders of one object are not independent of each other).

    Returns ``{"share", "lo", "hi"}`` rounded to 4 decimals and the number of renders ``"n"``.
    """
    present = torch.bincount(instance) > 0
    per_instance = (torch.bincount(instance, weights=passed.double()) / torch.bincount(instance).clamp_min(1))[present]
    lo, hi = bootstrap_ci(per_instance.numpy())
    return {"share": round(float(passed.float().mean()), 4), "lo": round(float(lo), 4), "hi": round(float(hi), 4),
            "n": int(passed.numel())}


def right_by_bin(world: Any, s: Tensor, right: Tensor, bins: int) -> dict[str, list[dict]]:
    """Per factor of ``world.factors``, the share of ``right`` ``[M]`` (bool) in ``bins`` equal-width
    bins of the factor's range, for conditions ``s`` ``[M, C]`` (factor units).

    Returns ``{factor name: [{"low", "high", "share", "n"} per bin]}``.
    """
    table = {}
    for column, factor in enumerate(world.factors):
        edges = torch.linspace(factor.low, factor.high, bins + 1)
        index = torch.bucketize(s[:, column].contiguous(), edges[1:-1], right=True)
        table[factor.name] = [{"low": round(float(edges[b]), 3), "high": round(float(edges[b + 1]), 3),
                               "share": round(float(right[index == b].float().mean()), 4),
                               "n": int((index == b).sum())} for b in range(bins)]
    return table


def box_for_share(world: Any, s: Tensor, right: Tensor, bins: int, target: float,
                  min_kept: float = 0.3) -> tuple[dict[str, list[float]], Tensor]:
    """The box the reference is right in on at least ``target`` of the renders, found greedily.

    Every factor's range (``world.factors``) is cut into ``bins`` equal bins; each step drops the
    one outer bin (the lowest or highest one left of some factor, so the result stays a box) whose
    removal raises the right share of the renders left the most, until that share reaches
    ``target`` or fewer than ``min_kept`` of the renders would be left.

    Args: ``s`` ``[M, C]`` conditions (factor units), ``right`` ``[M]`` bool.
    Returns: the narrowed factors ``{name: [low, high]}`` and the renders inside the box ``[M]`` bool.
    """
    edges = [torch.linspace(f.low, f.high, bins + 1) for f in world.factors]
    index = [torch.bucketize(s[:, c].contiguous(), edges[c][1:-1], right=True) for c in range(len(edges))]
    span = [[0, bins - 1] for _ in edges]

    def inside(spans: list[list[int]]) -> Tensor:
        keep = torch.ones_like(right)
        for c, (first, last) in enumerate(spans):
            keep &= (index[c] >= first) & (index[c] <= last)
        return keep

    keep = inside(span)
    while float(right[keep].float().mean()) < target:
        best = None
        for c in range(len(span)):
            if span[c][0] == span[c][1]:
                continue
            for end in (0, 1):
                trial = [list(pair) for pair in span]
                trial[c][end] += 1 if end == 0 else -1
                trial_keep = inside(trial)
                if trial_keep.float().mean() < min_kept:
                    continue
                score = float(right[trial_keep].float().mean())
                if best is None or score > best[0]:
                    best = (score, trial, trial_keep)
        if best is None:
            break
        _, span, keep = best
    bounds = {f.name: [round(float(edges[c][first]), 3), round(float(edges[c][last + 1]), 3)]
              for c, (f, (first, last)) in enumerate(zip(world.factors, span)) if (first, last) != (0, bins - 1)}
    return bounds, keep
