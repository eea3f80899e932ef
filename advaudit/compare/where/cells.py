"""The cells of a factor the per-factor sensitivity measures accuracy in: fifths of its range, and bands of
distance from its reference value.

**Fifths** cut ``[low, high]`` in five equal parts (from ``low``; on a circle too): where along its range a
factor hurts. **Bands** fold the range at the factor's reference value (:mod:`advaudit.worlds.references`) and
cut the distance from it, ``d = |value - reference|`` (round the circle where periodic), at 20% and 60% of the
largest distance ``D`` the box allows: *near* ``[0, 0.2 D]``, *middle* ``(0.2 D, 0.6 D]`` and *far*
``(0.6 D, D]``. On a box symmetric about the reference (rotation -30..30, reference 0) the bands are exactly
the middle fifth, the two fifths beside it and the two outer fifths together, so a loss at **both ends** of a
range (a U, as a model trained without an augmentation shows on both sides of the identity) is one cell
holding both ends' conditions instead of two fifths holding half of them each: the same effect measured on
twice the conditions, and one test instead of two. A factor without a reference has fifths only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from advaudit.compare.where.words import region_text
from advaudit.core.statistics import ALPHA
from advaudit.worlds.references import distance_from_reference, largest_distance, references_of

FIFTHS = 5
#: the bands' outer edges as shares of the largest distance from the reference
BAND_EDGES = (0.2, 0.6, 1.0)
BAND_NAMES = ("near", "middle", "far")


@dataclass(frozen=True)
class Cells:
    """One way of cutting one factor into cells: ``kind`` ``fifth`` (``bounds`` in factor units) or ``band``
    (``bounds`` in distance from ``reference``, in factor units)."""

    factor: Any
    kind: str
    bounds: tuple[tuple[float, float], ...]
    reference: float | None = None

    @property
    def name(self) -> str:
        return str(self.factor.name)

    @property
    def unit(self) -> str:
        return str(getattr(self.factor, "unit", "") or "")

    def index(self, values: np.ndarray) -> np.ndarray:
        """``[...]`` factor values -> ``[...]`` cell index (0..4 for fifths, 0..2 for bands)."""
        f = self.factor
        if self.kind == "fifth":
            unit = (np.asarray(values, float) - f.low) / (f.high - f.low)
            return np.clip(np.floor(unit * FIFTHS), 0, FIFTHS - 1).astype(int)
        d = distance_from_reference(values, f, float(self.reference)) / largest_distance(f, float(self.reference))
        return np.searchsorted(np.asarray(BAND_EDGES[:-1]), d, side="left").astype(int)

    def words(self, k: int) -> str:
        """``rotation 18-30 deg`` (a fifth) / ``rotation 18-30 deg from 0, both ends`` (a band)."""
        low, high = self.bounds[k]
        return region_text(self.name, self.kind, low, high, self.unit, self.reference)


def band_values(factor: Any, reference: float, low: float, high: float, u: np.ndarray) -> np.ndarray:
    """Uniform draws ``u`` ``[...]`` in [0, 1) mapped onto the values of ``factor``'s box whose distance from
    ``reference`` lies in ``[low, high]`` (both sides of the reference, each as long as the box allows; round the
    circle where periodic)."""
    if getattr(factor, "periodic", False):
        period = factor.high - factor.low
        segments = [(reference + low, reference + high), (reference - high, reference - low)]
    else:
        segments = [(max(factor.low, reference - high), min(factor.high, reference - low)),
                    (max(factor.low, reference + low), min(factor.high, reference + high))]
    segments = [(a, b) for a, b in segments if b > a]
    if low == 0 and len(segments) == 2:                    # the near band is one interval about the reference
        segments = [(segments[0][0], segments[1][1])] if not getattr(factor, "periodic", False) else segments
    lengths = np.array([b - a for a, b in segments])
    position = np.asarray(u, float) * lengths.sum()
    edges = np.concatenate([[0.0], np.cumsum(lengths)])
    which = np.clip(np.searchsorted(edges, position, side="right") - 1, 0, len(segments) - 1)
    starts = np.array([a for a, _ in segments])
    values = starts[which] + position - edges[which]
    if getattr(factor, "periodic", False):
        values = factor.low + np.mod(values - factor.low, period)
    return np.clip(values, factor.low, factor.high)


def fifths_of(factor: Any) -> Cells:
    width = (factor.high - factor.low) / FIFTHS
    return Cells(factor, "fifth", tuple((factor.low + width * k, factor.low + width * (k + 1)) for k in range(FIFTHS)))


def bands_of(factor: Any, reference: float) -> Cells | None:
    """The bands of ``factor`` about ``reference`` (None where the reference lies outside its box: nothing to fold)."""
    if not factor.low <= reference <= factor.high and not getattr(factor, "periodic", False):
        return None
    largest = largest_distance(factor, reference)
    edges = (0.0,) + tuple(e * largest for e in BAND_EDGES)
    return Cells(factor, "band", tuple((edges[k], edges[k + 1]) for k in range(len(BAND_EDGES))), float(reference))


def cells_of(world: Any, factors: Sequence[Any] | None = None) -> list[Cells]:
    """Per factor with a range (of ``factors``, default the world's): its fifths, then its bands where it has a
    reference value."""
    references = references_of(world)
    out: list[Cells] = []
    for factor in factors if factors is not None else world.factors:
        if factor.high <= factor.low:
            continue
        out.append(fifths_of(factor))
        reference = references.get(factor.name)
        bands = bands_of(factor, reference) if reference is not None else None
        if bands is not None:
            out.append(bands)
    return out


def per_cell(correct: np.ndarray, index: np.ndarray, count: int) -> np.ndarray:
    """``correct`` ``[n, m]`` and cell ``index`` ``[n, m]`` -> per-instance accuracy ``[n, count]`` (NaN where an
    instance has no condition in a cell)."""
    mask = index[:, :, None] == np.arange(count)[None, None, :]          # [n, m, count]
    counts = mask.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, (correct[:, :, None] * mask).sum(1) / np.maximum(counts, 1), np.nan)


def cell_fields(cells: Cells, k: int) -> dict[str, Any]:
    """A row's description of cell ``k``: ``factor``, ``unit``, ``kind``, ``fifth`` (the cell's index), ``low``,
    ``high`` (factor units for a fifth, distance from ``reference`` for a band), ``place`` (its words)."""
    low, high = cells.bounds[k]
    out = {"factor": cells.name, "unit": cells.unit, "kind": cells.kind, "fifth": k, "low": float(low),
           "high": float(high), "place": cells.words(k)}
    if cells.reference is not None:
        out["reference"] = cells.reference
    return out


def said(row: dict[str, Any], alpha: float = ALPHA, min_points: float = 0.0) -> bool:
    """Said only where the interaction's corrected p is below ``alpha``, its 95% interval lies beyond
    ``min_points`` accuracy points (``min_points=0``: excludes 0), and the accuracy in the fifth itself
    differs the same way (interval excluding 0): the checkpoint said to lose more there is the less
    accurate one there."""
    inside, margin = row["in_fifth"], min_points / 100
    if not (math.isfinite(row["p_holm"]) and row["p_holm"] < alpha):
        return False
    if row["hi"] < -margin:
        return bool(inside["hi"] < 0)
    return bool(row["lo"] > margin and inside["lo"] > 0)
