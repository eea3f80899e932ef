"""A guarded LOWESS: statsmodels' ``lowess`` with the traps it has removed.

Traps handled: argument order is ``(y, x)``; too small a ``frac`` (fewer than 3 neighbours) or
heavily tied ``x`` give silent NaNs; ``xvals`` cannot be combined with ``delta``; non-finite inputs.
"""

from __future__ import annotations

import numpy as np

from advaudit.errors import require


def lowess_fit(y: np.ndarray, x: np.ndarray, frac: float = 0.1, it: int = 3, delta: float = 0.0) -> np.ndarray:
    """Smoothed ``y`` as a function of ``x``, evaluated at every ``x`` (``[n]``; NaN where input was NaN).

    ``frac`` is raised to cover at least 3 points; NaNs in the fit (ties) are filled by linear
    interpolation along ``x`` from the finite fitted values.
    """
    # statsmodels is slow to import; only this path needs it
    from statsmodels.nonparametric.smoothers_lowess import lowess

    y, x = np.asarray(y, dtype=np.float64), np.asarray(x, dtype=np.float64)
    require(y.shape == x.shape, f"lowess: y {y.shape} and x {x.shape} differ")
    ok = np.isfinite(y) & np.isfinite(x)
    require(int(ok.sum()) >= 3, f"lowess needs at least 3 finite points, got {int(ok.sum())}")
    frac = max(float(frac), 3.0 / ok.sum())
    fitted = lowess(y[ok], x[ok], frac=min(frac, 1.0), it=int(it), delta=float(delta), return_sorted=False)
    fitted = np.asarray(fitted, dtype=np.float64)
    bad = ~np.isfinite(fitted)
    if bad.any():
        good = ~bad
        require(good.sum() >= 1, "lowess produced no finite value; raise frac")
        order = np.argsort(x[ok][good])
        fitted[bad] = np.interp(x[ok][bad], x[ok][good][order], fitted[good][order])
    out = np.full_like(y, np.nan)
    out[ok] = fitted
    return out
