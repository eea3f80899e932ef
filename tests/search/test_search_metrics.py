"""Building blocks of error search: guarded LOWESS, pools and the SDR / spread metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.search.lowess import lowess_fit
from advaudit.search.metrics import mean_and_ci, sdr_curve, spread_curve
from advaudit.search.pools import draw_pools, eligible


def test_lowess_recovers_a_smooth_curve_and_survives_its_traps() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.65, 1.0, 800)
    y = np.log(0.02 + 0.3 * (x - 0.6)) + rng.normal(0, 0.05, 800)
    fitted = lowess_fit(y, x, frac=0.1)
    assert np.abs(fitted - np.log(0.02 + 0.3 * (x - 0.6))).mean() < 0.03
    tied = np.repeat([0.7, 0.8, 0.9, 0.99], 50)  # heavy ties and a tiny frac
    assert np.isfinite(lowess_fit(tied * 2 + rng.normal(0, 0.01, 200), tied, frac=0.001)).all()
    y[:5] = np.nan  # failed attacks stay out of the fit and stay NaN
    out = lowess_fit(y, x)
    assert np.isnan(out[:5]).all() and np.isfinite(out[5:]).all()
    with pytest.raises(AdvauditError, match="at least 3 finite points"):
        lowess_fit(np.array([1.0, np.nan]), np.array([0.7, 0.8]))


def test_pools_are_distinct_subsets_and_the_filter_explains_itself() -> None:
    pools = draw_pools(50, 20, 7, torch.Generator().manual_seed(0))
    assert pools.shape == (7, 20) and all(len(set(row.tolist())) == 20 for row in pools)
    assert int(pools.max()) < 50 and not torch.equal(pools[0], pools[1])
    with pytest.raises(AdvauditError, match="exceeds the 50 items"):
        draw_pools(50, 60, 1, torch.Generator())
    predicted, confidence = torch.tensor([1, 1, 0, 1]), torch.tensor([0.9, 0.6, 0.99, 0.7])
    assert eligible(predicted, confidence, 1, 0.65).tolist() == [True, False, False, True]
    with pytest.raises(AdvauditError, match=r"confidence > 0.95.*'>0.9': 0"):
        eligible(predicted, confidence, 1, 0.95)


def test_sdr_and_spread_known_answers() -> None:
    errors = torch.tensor([[True, False, True]])
    confidence = torch.tensor([[0.9, 0.8, 0.7]])
    assert torch.allclose(sdr_curve(errors, confidence), torch.tensor([[10.0, 1 / 0.3, 2 / 0.6]], dtype=torch.float64))
    features = torch.tensor([[0.0], [1.0], [3.0]])
    assert torch.allclose(spread_curve(features, torch.tensor([0, 2])), torch.tensor([4 / 3, 1 / 3]))
    mean, half = mean_and_ci(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert mean.tolist() == [2.0, 3.0] and float(half[0]) > 0
