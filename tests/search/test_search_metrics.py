"""Building blocks of error search: guarded LOWESS, pools and the SDR / spread metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.search.coverage import NeighbourCoverage, coverage_utility_curve, pool_diameter
from advaudit.search.lowess import lowess_fit
from advaudit.search.metrics import pool_mean_and_sd, sdr_curve, spread_curve
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
    mean, sd = pool_mean_and_sd(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert mean.tolist() == [2.0, 3.0] and torch.allclose(sd, torch.full((2,), 2 ** 0.5, dtype=torch.float64))


def test_spread_is_lower_when_queries_cover_the_pool_and_batches_agree() -> None:
    """Eq. 6: mean distance to the nearest query; two spread-out queries beat two neighbours."""
    line = torch.tensor([[0.0], [1.0], [2.0], [9.0], [10.0]])
    covering, clumped = spread_curve(line, torch.tensor([1, 4])), spread_curve(line, torch.tensor([0, 1]))
    assert torch.allclose(covering[-1], torch.tensor(3 / 5)) and torch.allclose(clumped[-1], torch.tensor(18 / 5))
    g = torch.Generator().manual_seed(0)
    features, queried = torch.randn(3, 40, 4, generator=g), torch.randint(0, 40, (3, 6), generator=g)
    batched = spread_curve(features, queried)
    assert torch.allclose(batched, torch.stack([spread_curve(features[r], queried[r]) for r in range(3)]))


def test_coverage_utility_known_answer() -> None:
    """U = sum_x c_x max_{found error q} exp(-(d / d_max)^2 / var): only errors cover, each covers itself."""
    features = torch.tensor([[[0.0], [1.0], [4.0]]])       # d_max = 4
    confidence = torch.tensor([[0.9, 0.8, 0.7]])
    positions, answers = torch.tensor([[1, 2]]), torch.tensor([[True, False]])
    curve = coverage_utility_curve(features, confidence, positions, answers, variance=0.1)
    near = float(np.exp(-(1 / 4) ** 2 / 0.1))
    expected = 0.9 * near + 0.8 + 0.7 * float(np.exp(-(3 / 4) ** 2 / 0.1))
    assert torch.allclose(curve, torch.tensor([[expected, expected]], dtype=torch.float64))
    assert float(pool_diameter(features)[0]) == 4.0


def test_neighbour_coverage_gain_matches_the_exact_utility() -> None:
    g = torch.Generator().manual_seed(1)
    features, confidence = torch.randn(2, 30, 3, generator=g), 0.65 + 0.35 * torch.rand(2, 30, generator=g)
    state = NeighbourCoverage(features, confidence, neighbours=30, variance=0.05)
    found = torch.tensor([[4, 9], [0, 17]])
    for step in range(2):
        state.add_errors(found[:, step], torch.tensor([True, True]))
    base = coverage_utility_curve(features, confidence, found, torch.ones(2, 2, dtype=torch.bool), 0.05)[:, -1]
    assert torch.allclose(state.utility(), base, atol=1e-5)
    for i in (3, 4, 25):
        with_i = torch.cat([found, torch.full((2, 1), i)], 1)
        exact = coverage_utility_curve(features, confidence, with_i, torch.ones(2, 3, dtype=torch.bool), 0.05)[:, -1]
        assert torch.allclose(state.gain_if_error()[:, i], exact - base, atol=1e-5)


def test_replications_are_summarised_over_seeds_with_paired_differences() -> None:
    from advaudit.audits.error_search_report import aggregate_replications, replications_markdown

    summaries = [{"seed": s, "search/budget": 20, "search/eligible": 100, "search/eligible_errors": 10,
                  "search/pool_size": 50, "search/replications": 10,
                  "search/random/sdr@20": 1.0 + s, "search/gad/sdr@20": 3.0 + s,
                  "search/gad/queried_confidence": 0.8, "search/gad/pseudo_r2": 0.9} for s in range(4)]
    table = aggregate_replications(summaries)
    gad = table["methods"]["gad"]["sdr@20"]
    assert gad["n"] == 4 and gad["mean"] == 4.5 and gad["lo"] < 4.5 < gad["hi"]
    gain = table["vs_random"]["gad"]["sdr@20"]   # paired by seed: exactly 2 every time, no spread
    assert gain["mean"] == gain["lo"] == gain["hi"] == 2.0
    assert "pseudo_r2" not in table["methods"]["gad"]
    assert "| gad | - | - | 4.50 [" in replications_markdown("toy", table)


def test_paired_differences_give_a_t_interval_and_a_sign_count() -> None:
    from advaudit.audits.error_search_report import aggregate_replications, paired_difference, replications_markdown

    d = paired_difference([2.0, 4.0, 6.0, 8.0, 10.0], [1.0, 2.0, 3.0, 4.0, 5.0])   # differences 1..5
    half = 2.776445 * np.sqrt(2.5) / np.sqrt(5)                                      # t_{4, 0.975} sd / sqrt(n)
    assert d["mean"] == 3.0 and d["above"] == 5 and d["n"] == 5
    assert abs(d["t_lo"] - (3 - half)) < 1e-4 and abs(d["t_hi"] - (3 + half)) < 1e-4
    assert d["t_lo"] < d["lo"] and d["hi"] < d["t_hi"]   # the percentile bootstrap is narrower at n = 5
    assert paired_difference([0.0, 2.0, 3.0], [1.0, 1.0, 1.0])["above"] == 2
    summaries = [{"seed": s, "search/budget": 20, "search/eligible": 100, "search/eligible_errors": 10,
                  "search/pool_size": 100, "search/replications": 10, "search/random/sdr@5": 1.0,
                  "search/random/sdr@20": 1.0, "search/gad/sdr@5": 1.0 - s, "search/gad/sdr@20": 1.0 + s,
                  "target/test_acc": 0.8 + s / 100, "search/critical_class_ece": 0.1} for s in range(5)]
    text = replications_markdown("toy", aggregate_replications(summaries))
    assert "target test accuracy [0.800, 0.810, 0.820, 0.830, 0.840], critical-class ECE" in text
    assert "| SDR@5 - random | SDR@10 - random | SDR@20 - random |" in text
    assert "(-3.96, -0.04; 0/5)" in text and "(+0.04, +3.96; 4/5)" in text   # gad: differences 0, -1..-4 / 0..4


def test_error_auc_separates_information_beyond_confidence_from_confidence_itself() -> None:
    from sklearn.metrics import roc_auc_score

    from advaudit.search.metrics import error_auc, error_auc_within_confidence

    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.65, 1.0, 4000)
    is_error = rng.random(4000) < 1 - confidence                  # calibrated: errors follow confidence only
    score = rng.normal(size=4000)
    assert abs(error_auc(score, is_error) - roc_auc_score(is_error, score)) < 1e-12
    assert error_auc([1.0, 1.0, 2.0], [False, True, True]) == 0.75    # a tie counts 1/2
    assert np.isnan(error_auc([1.0, 2.0], [True, True]))
    assert error_auc(-confidence, is_error) > 0.6                  # confidence ranks errors overall ...
    assert abs(error_auc_within_confidence(-confidence, is_error, confidence, bins=20) - 0.5) < 0.06  # ... not beyond
    assert abs(error_auc_within_confidence(score, is_error, confidence) - 0.5) < 0.06                # noise knows nothing
    planted = score - 2.0 * is_error                               # a score that knows the errors beyond confidence
    assert error_auc_within_confidence(-planted, is_error, confidence) > 0.85
