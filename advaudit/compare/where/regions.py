"""Where two checkpoints' worst cases lie differently: one two-sample test per factor, and a region.

For two checkpoints A and B examined alike, each searched factor's worst-case values of A
(``[n_a]``, one per examined instance and seed) are tested against B's (``[n_b]``):

- on an interval, the two-sample Kolmogorov-Smirnov test (scipy's ``ks_2samp``);
- on a circle (a periodic factor: camera roll, a light's azimuth), the two-sample Kuiper test
  ``V = max(F_A - F_B) + max(F_B - F_A)`` over the empirical distribution functions, which does not
  depend on where the circle is cut, with a permutation p-value (scipy's ``permutation_test``,
  seeded): a cluster straddling 0/360 deg is one cluster.

The p-values of one pair are Holm-corrected across its factors. The factor with the smallest
corrected p gets a **region**: the window one fifth of its range wide (slid in steps of a tenth; on
a circle also across the seam) where the share of one checkpoint's worst cases exceeds the other's
most. That checkpoint is the *suspect*. The region is **proposed** only when the corrected p is
below ``alpha``; either way it only chooses where to look: what decides is the confirmation on
held-out instances (:mod:`advaudit.compare.where.confirm`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy.stats import ks_2samp, permutation_test

from advaudit.core.statistics import ALPHA, kuiper_statistic

WINDOW = 0.2     # a region is a fifth of the factor's range wide
STEP = 0.1       # slid in tenths of the range


@dataclass(frozen=True)
class Axis:
    """A factor as this module needs it: name, bounds, unit and whether it is a circle."""

    name: str
    low: float
    high: float
    unit: str = ""
    periodic: bool = False

    @classmethod
    def of(cls, factor: Any) -> "Axis":
        """From a world's :class:`~advaudit.worlds.protocol.Factor` (or anything with those fields)."""
        return cls(factor.name, float(factor.low), float(factor.high), str(getattr(factor, "unit", "") or ""),
                   bool(getattr(factor, "periodic", False)))

    def unit_values(self, values: np.ndarray) -> np.ndarray:
        """``[n]`` factor values -> ``[n]`` positions in [0, 1] (taken modulo 1 on a circle)."""
        u = (np.asarray(values, dtype=float) - self.low) / (self.high - self.low)
        return np.mod(u, 1.0) if self.periodic else np.clip(u, 0.0, 1.0)


@dataclass
class FactorTest:
    """One factor's two-sample test between checkpoints ``a`` and ``b`` and its best region.

    ``region``: ``(low, high)`` in factor units; on a circle ``low > high`` is the arc from ``low``
    up through the seam to ``high``. ``share_suspect`` / ``share_other``: the shares of the suspect's
    and the other checkpoint's worst cases inside it (a fifth each under uniform conditions).
    """

    factor: str
    unit: str
    periodic: bool
    test: str
    statistic: float
    p: float
    n_a: int
    n_b: int
    region: tuple[float, float]
    suspect: str
    other: str
    share_suspect: float
    share_other: float
    p_holm: float = float("nan")

    def proposed(self, alpha: float = ALPHA) -> bool:
        return math.isfinite(self.p_holm) and self.p_holm < alpha

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "region": list(self.region)}


def two_sample(a: np.ndarray, b: np.ndarray, axis: Axis, resamples: int = 4999,
               seed: int = 0) -> tuple[str, float, float]:
    """``(test, statistic, p)`` for worst-case values ``a`` ``[n_a]`` and ``b`` ``[n_b]`` on ``axis``."""
    if not axis.periodic:
        result = ks_2samp(a, b)
        return "KS", float(result.statistic), float(result.pvalue)
    result = permutation_test((axis.unit_values(a), axis.unit_values(b)), kuiper_statistic, vectorized=True,
                              n_resamples=resamples, alternative="greater", rng=np.random.default_rng(seed))
    return "Kuiper (permutation)", float(result.statistic), float(result.pvalue)


def window_shares(unit: np.ndarray, periodic: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(starts [k], shares [k])``: each window of width :data:`WINDOW` starting at a multiple of
    :data:`STEP` (on a circle the ones that cross the seam too) and the share of ``unit`` inside it."""
    steps = round(1 / STEP)
    starts = np.arange(steps if periodic else steps - round(WINDOW / STEP) + 1) / steps
    offset = np.mod(unit[None, :] - starts[:, None], 1.0) if periodic else unit[None, :] - starts[:, None]
    inside = (offset >= 0) & (offset <= WINDOW + 1e-12)
    return starts, inside.mean(1)


def best_region(a: np.ndarray, b: np.ndarray, axis: Axis, names: tuple[str, str]) -> dict[str, Any]:
    """The window where one checkpoint's share of worst cases exceeds the other's most."""
    starts, share_a = window_shares(axis.unit_values(a), axis.periodic)
    _, share_b = window_shares(axis.unit_values(b), axis.periodic)
    gap = share_a - share_b
    k = int(np.argmax(np.abs(gap)))
    width = axis.high - axis.low
    step = round(starts[k] / STEP)
    low = axis.low + width * step / round(1 / STEP)
    high = axis.low + width * (step + round(WINDOW / STEP)) / round(1 / STEP)
    if axis.periodic and high > axis.high + 1e-9 * width:
        high -= width                                 # the arc crosses the seam: low > high
    first = gap[k] >= 0
    suspect, other = names if first else names[::-1]
    return {"region": (float(low), float(high)), "suspect": suspect, "other": other,
            "share_suspect": float((share_a if first else share_b)[k]),
            "share_other": float((share_b if first else share_a)[k])}


def between_checkpoints(values: dict[str, dict[str, np.ndarray]], axes: Sequence[Axis], names: tuple[str, str],
                        seed: int = 0) -> list[FactorTest]:
    """One :class:`FactorTest` per factor of ``axes`` with values for both checkpoints.

    ``values``: ``{factor: {checkpoint: worst-case values [n]}}``; ``names``: the two checkpoints.
    p-values are raw here; :func:`advaudit.core.statistics.holm` corrects them (over whichever tests the caller pools).
    """
    tests = []
    for axis in axes:
        by = values.get(axis.name) or {}
        a, b = (np.asarray(by.get(n, []), float) for n in names)
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if len(a) < 2 or len(b) < 2 or axis.high <= axis.low:
            continue
        test, statistic, p = two_sample(a, b, axis, seed=seed)
        tests.append(FactorTest(axis.name, axis.unit, axis.periodic, test, statistic, p, len(a), len(b),
                                **best_region(a, b, axis, names)))
    return tests


def strongest(tests: list[FactorTest]) -> FactorTest | None:
    """The test with the smallest corrected p (the first of equals), or None."""
    return min(tests, key=lambda t: t.p_holm) if tests else None
