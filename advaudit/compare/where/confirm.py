"""The confirmation: both checkpoints on held-out instances under new random conditions in a region.

A region proposed from the worst cases (:mod:`advaudit.compare.where.regions`) was chosen on the examined
instances and the examiners' conditions; it is checked on others. Instances come from the split
the examination did not use (``test`` when it examined ``val``, else ``val``), drawn with the seed;
each gets ``m`` random conditions, uniform over the world's factors except the region's factor,
which is uniform inside the region (an arc across the seam on a circle). Every condition is
rendered once and scored by both checkpoints (the same images), so each instance gives a pair:

- the mean true-class probability over its ``m`` conditions for each checkpoint (the primary
  number: the demo's check, random search's E_T), and its accuracy over them;
- the paired difference over instances with a 95% bootstrap interval and the Wilcoxon
  signed-rank p-value; the checkpoint with the lower mean is **weaker there** when the p-value,
  Holm-corrected over the group's confirmations, is below ``alpha``; otherwise nothing separates them.

New instances and new conditions: the choice of region needs no correction. What was rendered is
recorded (split, instance ids, seed, conditions per instance, how they were drawn), and
:func:`region_conditions` redraws the same conditions from that record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor

from advaudit.compare.where.cells import band_values
from advaudit.compare.where.regions import Axis
from advaudit.compare.where.words import confirmation_words
from advaudit.core.statistics import ALPHA, holm, paired_mean_test, welch_test
from advaudit.worlds.protocol import unit_to_factor

DRAW = ("torch.Generator().manual_seed(seed): torch.rand([n, m, C]) mapped onto the factors' bounds; "
        "the region's factor then torch.rand([n, m]) mapped onto the region (an arc may cross the seam)")


@dataclass(frozen=True)
class Settings:
    """How much the checks render. ``instances``: held-out instances (at most, per group);
    ``region_conditions``: random conditions per instance in a region; ``random_conditions``: per
    instance over all of S for the per-factor sensitivity; ``batch``: images per forward pass;
    ``min_points``: the smallest checkpoint x fifth difference (accuracy points) the sensitivity
    says, see :func:`advaudit.compare.where.sensitivity.said`; ``why_instances``: held-out instances of the why section
    (:mod:`advaudit.compare.why`, at most; recipes confirm on as many others), ``why_renders``: renders per
    intervention (instances x conditions per instance), ``why_min_points``: the smallest part of a gap, in
    accuracy points, it names, ``factor_groups``: groups of factors of the user's own, ``((name, (factor, ...)), ...)``."""

    instances: int = 60
    region_conditions: int = 32
    random_conditions: int = 100
    alpha: float = ALPHA
    min_points: float = 3.0
    batch: int = 512
    why_instances: int = 200
    why_renders: int = 800
    why_min_points: float = 1.0
    factor_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()


def held_out_split(examined: str) -> str:
    """The split the examination did not use: ``test`` unless it examined ``test``, then ``val``."""
    return "val" if str(examined) == "test" else "test"


def choose_instances(world: Any, split: str, n: int, seed: int, skip: int = 0) -> Any:
    """Up to ``n`` instances of ``split`` drawn with ``seed`` (sorted by position in the split); ``skip``
    passes over the first ``skip`` of the same draw, so ``skip=n`` gives instances disjoint from ``skip=0``'s."""
    pool = world.instances(split)
    order = torch.randperm(len(pool), generator=torch.Generator().manual_seed(int(seed)))[skip:skip + n]
    return pool.subset(order.sort().values)


def uniform_conditions(factors: Sequence[Any], n: int, m: int, seed: int) -> Tensor:
    """``[n, m, C]`` conditions uniform over ``factors``' bounds, drawn with ``seed``."""
    return _uniform(factors, n, m, torch.Generator().manual_seed(int(seed)))


def _uniform(factors: Sequence[Any], n: int, m: int, generator: torch.Generator) -> Tensor:
    return unit_to_factor(torch.rand(n, m, len(factors), generator=generator), factors)


def region_conditions(factors: Sequence[Any], n: int, m: int, factor: str, region: Sequence[float],
                      seed: int) -> Tensor:
    """``[n, m, C]``: uniform over S with ``factor`` uniform in ``region`` (module docstring, :data:`DRAW`)."""
    generator = torch.Generator().manual_seed(int(seed))
    s = _uniform(factors, n, m, generator)
    index = [f.name for f in factors].index(factor)
    axis = Axis.of(factors[index])
    low, high = float(region[0]), float(region[1])
    length = (high - low) % (axis.high - axis.low) if axis.periodic and low > high else high - low
    values = low + torch.rand(n, m, generator=generator) * length
    if axis.periodic:
        values = axis.low + torch.remainder(values - axis.low, axis.high - axis.low)
    s[:, :, index] = values.clamp(axis.low, axis.high)
    return s


def score(world: Any, z: Any, s: Tensor, targets: dict[str, Any], calibrated: bool = False,
          batch: int = 512) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Render ``z`` under ``s`` ``[N, m, C]`` once; per target ``(true_prob [N, m], correct [N, m])``."""
    n, m, _ = s.shape
    per_chunk = max(1, batch // max(m, 1))
    out: dict[str, list[tuple[Tensor, Tensor]]] = {name: [] for name in targets}
    for start in range(0, n, per_chunk):
        index = torch.arange(start, min(start + per_chunk, n))
        part = z.subset(index)
        images = world.render(part, s[index]).cpu()
        labels = part.labels.cpu().repeat_interleave(m)
        for name, target in targets.items():
            with torch.no_grad():
                probs = target.predict_proba(images, calibrated=calibrated).cpu().float()
            true_prob = probs.gather(1, labels.view(-1, 1)).squeeze(1)
            out[name].append((true_prob.view(-1, m), (probs.argmax(1) == labels).view(-1, m)))
    return {name: (torch.cat([p for p, _ in parts]).numpy().astype(float),
                   torch.cat([c for _, c in parts]).numpy().astype(float)) for name, parts in out.items()}


def cell_conditions(factors: Sequence[Any], n: int, m: int, cell: dict[str, Any], seed: int) -> Tensor:
    """``[n, m, C]``: uniform over S with the cell's factor uniform in it: a region or fifth (``region`` or ``low``,
    ``high`` in factor units; :func:`region_conditions`) or a band of distance from ``reference`` (``kind`` ``band``:
    both sides of the reference, :func:`advaudit.compare.where.cells.band_values`)."""
    low, high = cell.get("region") or (cell["low"], cell["high"])
    if cell.get("kind") != "band":
        return region_conditions(factors, n, m, cell["factor"], (low, high), seed)
    generator = torch.Generator().manual_seed(int(seed))
    s = _uniform(factors, n, m, generator)
    index = [f.name for f in factors].index(cell["factor"])
    u = torch.rand(n, m, generator=generator).numpy()
    s[:, :, index] = torch.as_tensor(band_values(factors[index], float(cell["reference"]), low, high, u), dtype=s.dtype)
    return s


def confirm(world: Any, z: Any, targets: dict[str, Any], sides: dict[str, tuple[str, ...]], pair: tuple[str, str],
            cell: dict[str, Any], seed: int, settings: Settings, calibrated: bool = False) -> dict[str, Any]:
    """The check of ``cell`` (:func:`cell_conditions`) for checkpoints ``pair`` (names of ``sides``, each its files in
    ``targets``) on instances ``z``; ``p_holm`` and the verdict are set by :func:`decide` once all checks ran.
    Two recipes are compared over their files (Welch, every pair of files agreeing), else over instances."""
    factors = list(world.factors)
    s = cell_conditions(factors, len(z), settings.region_conditions, cell, seed)
    units = sides[pair[0]] + sides[pair[1]]
    scores = score(world, z, s, {u: targets[u] for u in units}, calibrated, settings.batch)
    unit = next((str(getattr(f, "unit", "") or "") for f in factors if f.name == cell["factor"]), "")
    low, high = cell.get("region") or (cell["low"], cell["high"])
    check = {"a": pair[0], "b": pair[1], "factor": cell["factor"], "unit": unit, "region": [float(low), float(high)],
             "kind": cell.get("kind", "region"), "reference": cell.get("reference"),
             "split": None, "instances": [int(i) for i in z.ids.tolist()], "seed": int(seed),
             "conditions_per_instance": int(settings.region_conditions), "draw": DRAW}
    prob = {name: [scores[u][0].mean(1) for u in sides[name]] for name in pair}      # per file: [n]
    correct = {name: [scores[u][1].mean(1) for u in sides[name]] for name in pair}
    check["true_prob"] = {name: float(np.mean(prob[name])) for name in pair}
    check["accuracy"] = {name: float(np.mean(correct[name])) for name in pair}
    if min(len(sides[pair[0]]), len(sides[pair[1]])) >= 2:
        a, b = ([float(v.mean()) for v in prob[name]] for name in pair)
        check.update(welch_test(a, b), n=len(z), test="Welch t over files", pairs=len(a) * len(b),
                     agree=int(sum(np.sign(x - y) == np.sign(np.mean(a) - np.mean(b)) for x in a for y in b)),
                     accuracy_diff=welch_test(*([float(v.mean()) for v in correct[name]] for name in pair)))
        return check
    mean = {name: np.mean(prob[name], axis=0) for name in pair}
    check.update(paired_mean_test(mean[pair[0]], mean[pair[1]]), test="Wilcoxon",
                 accuracy_diff=paired_mean_test(*(np.mean(correct[name], axis=0) for name in pair)))
    return check


def decide(checks: list[dict[str, Any]], alpha: float = ALPHA) -> None:
    """Holm over ``checks`` (in place); each gets ``p_holm``, ``weaker`` (or None) and ``words``."""
    holm(checks)
    for check in checks:
        separated = (math.isfinite(check["p_holm"]) and check["p_holm"] < alpha and check["diff"] != 0
                     and check.get("agree", 0) == check.get("pairs", 0))
        check["weaker"] = (check["a"] if check["diff"] < 0 else check["b"]) if separated else None
        check["words"] = confirmation_words(check)
