"""Uncertainty for audit numbers: percentile-bootstrap intervals over independent units, and their cell.

The unit resampled must be an independent replication (instances of one examination, seeds,
retrained models), never overlapping resamples of one set. Every audit, the checkpoint comparison
and the benchmarks use :func:`bootstrap` (scipy's ``stats.bootstrap``, percentile method) and
:func:`format_interval`, so intervals mean the same thing and read the same way everywhere.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Mapping, Sequence

import numpy as np
from scipy import stats

DEFAULT_RESAMPLES = 2000
DEFAULT_LEVEL = 0.95


def bootstrap(statistic: Callable[[np.ndarray], np.ndarray], n_units: int, level: float = DEFAULT_LEVEL,
              resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap interval of a statistic of ``n_units`` independent units.

    ``statistic`` maps unit indices ``[..., n]`` (each row one resample of ``range(n_units)``) to the
    statistic's values ``[..., k]``; resampling indices lets one unit carry several numbers (a seed's
    fault and control counts resampled together: a cluster bootstrap). The resamples are scipy's
    (``stats.bootstrap``, ``method="percentile"``, ``rng=default_rng(seed)``: deterministic per
    seed). A resample where a value is undefined (NaN, e.g. a share of no tests) is left out of
    that value's percentiles; a value undefined in every resample gets ``(nan, nan)``.

    Returns ``(lo, hi)``, each ``[k]``. One unit gives ``lo = hi =`` its value (no spread can be
    estimated from one replication: report it, do not invent one).
    """
    if n_units < 2:
        point = np.asarray(statistic(np.zeros((1, max(n_units, 1)), dtype=np.int64))[0], dtype=np.float64)
        if n_units < 1:
            point = np.full_like(point, np.nan)
        return point.copy(), point.copy()

    def by_index(index: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.moveaxis(np.asarray(statistic(index), dtype=np.float64), -1, 0)

    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)  # undefined draws: handled below
        result = stats.bootstrap((np.arange(n_units),), by_index, vectorized=True, method="percentile",
                                 n_resamples=int(resamples), confidence_level=level,
                                 rng=np.random.default_rng(seed))
    low = np.array(result.confidence_interval.low, dtype=np.float64).reshape(-1)
    high = np.array(result.confidence_interval.high, dtype=np.float64).reshape(-1)
    draws = np.asarray(result.bootstrap_distribution, dtype=np.float64).reshape(len(low), -1)  # [k, resamples]
    tail = (1.0 - level) / 2.0
    for row in np.flatnonzero(~(np.isfinite(low) & np.isfinite(high))):
        finite = draws[row][np.isfinite(draws[row])]
        low[row], high[row] = np.quantile(finite, [tail, 1.0 - tail]) if finite.size else (np.nan, np.nan)
    return low, high


def bootstrap_ci(values: Sequence[float] | np.ndarray, level: float = DEFAULT_LEVEL,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` ``[n]`` (NaNs dropped; :func:`bootstrap`).

    Returns ``(nan, nan)`` for no finite values and ``(v, v)`` for a single one.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    low, high = bootstrap(lambda index: v[index].mean(-1, keepdims=True), v.size, level, resamples, seed)
    return float(low[0]), float(high[0])


def mean_with_ci(values: Sequence[float] | np.ndarray, level: float = DEFAULT_LEVEL,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, float]:
    """``{"mean", "lo", "hi", "n"}`` for ``values`` ``[n]`` (NaNs dropped; see :func:`bootstrap_ci`)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = v[np.isfinite(v)]
    low, high = bootstrap_ci(finite, level, resamples, seed)
    return {"mean": float(finite.mean()) if finite.size else float("nan"), "lo": low, "hi": high,
            "n": int(finite.size)}


def format_interval(mean: float, lo: float, hi: float, digits: int = 2, *, sign: bool = False,
                    percent: bool = False, undefined: str | None = None) -> str:
    """The ``"mean [lo, hi]"`` cell: each number with ``digits`` decimals (``sign``: always signed;
    ``percent``: as percentages, ``0.5`` -> ``50%``); a non-finite number reads ``undefined`` where
    given (else as Python formats it: ``nan``)."""

    def number(value: float) -> str:
        if undefined is not None and not math.isfinite(value):
            return undefined
        scaled = 100 * value if percent else value
        return f"{scaled:{'+' if sign else ''}.{digits}f}" + ("%" if percent else "")

    return f"{number(mean)} [{number(lo)}, {number(hi)}]"


def format_summary(summary: Mapping[str, float] | None, digits: int = 2, missing: str = "-",
                   centre: str = "mean") -> str:
    """:func:`format_interval` of a summary ``{centre, "lo", "hi"[, "n"]}`` (as :func:`mean_with_ci`
    returns); ``missing`` for no summary or one of no values (``n == 0``)."""
    if not summary or summary.get("n", 1) == 0:
        return missing
    return format_interval(summary[centre], summary["lo"], summary["hi"], digits)


def format_p(p: float) -> str:
    """A p-value as every report writes it: two significant digits, scientific below 1e-4, ``nan`` when undefined."""
    return "nan" if not math.isfinite(p) else (f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}")
