"""Uncertainty for audit numbers: percentile-bootstrap intervals over independent units.

The unit resampled must be an independent replication (instances of one examination, seeds,
retrained models), never overlapping resamples of one set. Every audit and the checkpoint
comparison use these two functions, so intervals mean the same thing everywhere.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_LEVEL = 0.95


def bootstrap_ci(values: Sequence[float] | np.ndarray, level: float = DEFAULT_LEVEL,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` ``[n]`` (NaNs dropped).

    Returns ``(nan, nan)`` for no finite values and ``(v, v)`` for a single one (no spread can be
    estimated from one replication: report it, do not invent one).
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    if v.size == 1:
        return float(v[0]), float(v[0])
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(int(resamples), v.size))].mean(1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def mean_with_ci(values: Sequence[float] | np.ndarray, level: float = DEFAULT_LEVEL,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, float]:
    """``{"mean", "lo", "hi", "n"}`` for ``values`` ``[n]`` (NaNs dropped; see :func:`bootstrap_ci`)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = v[np.isfinite(v)]
    low, high = bootstrap_ci(finite, level, resamples, seed)
    return {"mean": float(finite.mean()) if finite.size else float("nan"), "lo": low, "hi": high,
            "n": int(finite.size)}
