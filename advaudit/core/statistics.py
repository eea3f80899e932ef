"""The tests' shared pieces, each defined once: how a p-value is written, Holm's correction, the paired and
two-sample tests, Kuiper's tests.

Every report sentence writes a p-value with :func:`format_p`; every family of tests (a comparison's pairs, a
checkpoint's factors, the where and why sections' confirmations) is corrected with :func:`holm`; paired values
are tested with :func:`signed_rank_test` (and :func:`paired_mean_test`, its mean and interval beside it) or, for
0/1 outcomes, :func:`mcnemar_test`; two recipes over their files (one value per training seed) with
:func:`welch_test`; a periodic factor (a circle) is tested with Kuiper's statistic, whose value does not depend
on where the circle is cut: against uniform conditions with :func:`kuiper_uniform` (Stephens' p-value), between
two checkpoints' worst cases with :func:`kuiper_statistic` (a permutation test gives its p-value:
:mod:`advaudit.compare.where.regions`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence, TypeVar

import numpy as np
from scipy.stats import ttest_ind, wilcoxon

from advaudit.core.intervals import mean_with_ci

__all__ = ["ALPHA", "format_p", "holm", "kuiper_p_value", "kuiper_statistic", "kuiper_uniform", "mcnemar_test",
           "paired_mean_test", "signed_rank_test", "welch_test"]

Rows = TypeVar("Rows", bound=Sequence[Any])

#: the level every test of a report is read at (after Holm's correction over its family)
ALPHA = 0.05


def format_p(p: float) -> str:
    """A p-value as every report writes it: two significant digits, scientific below 1e-4, ``nan`` when undefined."""
    return "nan" if not math.isfinite(p) else (f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}")


def holm(rows: Rows, key: str = "p", out: str = "p_holm") -> Rows:
    """Holm's correction over one family: sets ``out`` on every row (in place; a dict's item or an object's
    attribute) from the rows' ``key`` p-values; rows without a finite p-value are left out of the family and keep
    the ``out`` they have (NaN when they have none). Returns ``rows``."""
    def get(row: Any, name: str, default: Any = None) -> Any:
        return row.get(name, default) if isinstance(row, dict) else getattr(row, name, default)

    def put(row: Any, value: float) -> None:
        if isinstance(row, dict):
            row[out] = value
        else:
            setattr(row, out, value)

    finite = [r for r in rows if isinstance(get(r, key), (int, float, np.floating)) and math.isfinite(get(r, key))]
    corrected = {id(r) for r in finite}
    if finite:
        # statsmodels waits for a family to correct: the audits import this module for format_p alone
        from statsmodels.stats.multitest import multipletests
        for row, p in zip(finite, multipletests([get(r, key) for r in finite], method="holm")[1]):
            put(row, float(p))
    for row in rows:
        if id(row) not in corrected and get(row, out) is None:
            put(row, float("nan"))
    return rows


def signed_rank_test(diffs: np.ndarray) -> tuple[float, float]:
    """``(statistic, p)`` of Wilcoxon's two-sided signed-rank test of paired differences ``[n]`` (NaNs dropped):
    ``(0, 1)`` when every difference is 0, ``(0, nan)`` for none (:func:`advaudit.compare.power.wilcoxon_p` is
    its batched form, for simulations)."""
    diffs = np.asarray(diffs, float)
    diffs = diffs[np.isfinite(diffs)]
    if len(diffs) == 0 or np.all(diffs == 0):
        return 0.0, 1.0 if len(diffs) else float("nan")
    result = wilcoxon(diffs, zero_method="wilcox", alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def paired_mean_test(a: np.ndarray, b: np.ndarray, interval: bool = True) -> dict[str, float]:
    """Mean of ``a - b`` over paired units ``[n]`` (NaNs dropped) with a 95% bootstrap interval
    (:func:`advaudit.core.intervals.mean_with_ci`) and Wilcoxon's p (:func:`signed_rank_test`):
    ``{"diff", "lo", "hi", "p", "n"}``; ``interval=False`` skips the bootstrap (NaN bounds)."""
    diffs = np.asarray(a, float) - np.asarray(b, float)
    diffs = diffs[np.isfinite(diffs)]
    nan = float("nan")
    stats = mean_with_ci(diffs) if interval else {"mean": float(diffs.mean()) if len(diffs) else nan, "lo": nan, "hi": nan}
    p = signed_rank_test(diffs)[1]
    return {"diff": stats["mean"], "lo": stats["lo"], "hi": stats["hi"], "p": p, "n": int(len(diffs))}


def welch_test(x: Any, y: Any) -> dict[str, Any]:
    """``mean(x) - mean(y)`` for the files of two recipes (``[k]`` and ``[l]`` values, one per file) with Welch's
    95% interval and two-sided p (scipy's ``ttest_ind(equal_var=False)``): the training seed is the replication
    unit of a recipe. Fewer than two files a side, or no spread on either side, give the difference with no test
    (its interval the point itself; p 1 when it is 0, else undefined). ``{"diff", "lo", "hi", "p", "n": [k, l]}``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    diff = float(x.mean() - y.mean())
    if len(x) < 2 or len(y) < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return {"diff": diff, "lo": diff, "hi": diff, "p": 1.0 if diff == 0 else float("nan"), "n": [len(x), len(y)]}
    result = ttest_ind(x, y, equal_var=False)
    interval = result.confidence_interval(0.95)
    return {"diff": diff, "lo": float(interval.low), "hi": float(interval.high), "p": float(result.pvalue),
            "n": [len(x), len(y)]}


def mcnemar_test(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """McNemar's test of paired 0/1 outcomes ``a`` and ``b`` ``[n]`` (true where above 0.5), exact binomial when
    fewer than 25 pairs are discordant; p 1 when none is. ``{"test", "statistic", "p", "only_a", "only_b"}``."""
    # statsmodels waits for a test to run: the audits import this module for format_p alone
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.asarray(a) > 0.5, np.asarray(b) > 0.5
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    table = [[int((a & b).sum()), only_a], [only_b, int((~a & ~b).sum())]]
    exact = only_a + only_b < 25
    result = mcnemar(table, exact=exact, correction=not exact)
    p = 1.0 if only_a + only_b == 0 else float(result.pvalue)
    return {"test": "McNemar" + (" (exact)" if exact else ""), "statistic": float(result.statistic), "p": p,
            "only_a": only_a, "only_b": only_b}


def kuiper_uniform(unit: np.ndarray) -> tuple[float, float]:
    """Kuiper's test of points on a circle (``unit`` in [0, 1), one turn) against the uniform distribution.

    ``V = D+ + D-`` with ``D+ = max_i (i/n - u_(i))`` and ``D- = max_i (u_(i) - (i-1)/n)`` over the sorted
    points: the same for every choice of where the circle is cut. p-value: Stephens' (1970)
    approximation, ``Q(lambda) = 2 sum_j (4 j^2 lambda^2 - 1) exp(-2 j^2 lambda^2)`` at
    ``lambda = (sqrt(n) + 0.155 + 0.24 / sqrt(n)) V`` (checked against simulation in the tests).
    """
    u = np.sort(np.mod(np.asarray(unit, dtype=float), 1.0))
    n = len(u)
    i = np.arange(1, n + 1)
    statistic = float(np.max(i / n - u) + np.max(u - (i - 1) / n))
    return statistic, kuiper_p_value(statistic, n)


def kuiper_p_value(statistic: float, n: int) -> float:
    """``P(V >= statistic)`` for ``n`` uniform points on a circle (Stephens' approximation, above)."""
    lam = (math.sqrt(n) + 0.155 + 0.24 / math.sqrt(n)) * statistic
    if lam < 0.4:  # the series is not accurate here; the true p-value is above 0.999
        return 1.0
    j = np.arange(1, 101)
    p = float(2 * np.sum((4 * j ** 2 * lam ** 2 - 1) * np.exp(-2 * j ** 2 * lam ** 2)))
    return float(min(1.0, max(0.0, p)))


def kuiper_statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Two-sample Kuiper ``V`` of points in [0, 1) ``x`` ``[..., n]`` and ``y`` ``[..., m]`` (batched over
    leading dimensions, as ``permutation_test(vectorized=True)`` calls it).

    Both empirical distribution functions are evaluated after the last of each run of tied values
    (examiners often put many worst cases exactly on a bound), by one sort: memory ``[..., n + m]``.
    """
    x, y = np.moveaxis(np.asarray(x, float), axis, -1), np.moveaxis(np.asarray(y, float), axis, -1)
    n = x.shape[-1]
    points = np.concatenate([x, y], -1)                                   # [..., n + m]
    order = np.argsort(points, -1, kind="stable")
    values = np.take_along_axis(points, order, -1)
    from_x = order < n
    gap = np.cumsum(from_x, -1) / n - np.cumsum(~from_x, -1) / y.shape[-1]
    last = np.ones(values.shape, dtype=bool)
    last[..., :-1] = values[..., 1:] != values[..., :-1]
    up = np.where(last, gap, -np.inf).max(-1)
    down = np.where(last, -gap, -np.inf).max(-1)
    return np.maximum(up, 0.0) + np.maximum(down, 0.0)
