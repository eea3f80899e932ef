"""Bootstrap intervals: coverage of a known mean, degenerate inputs, determinism, the seeded resamples
and the one interval cell."""

from __future__ import annotations

import math

import numpy as np

from advaudit.core.intervals import bootstrap, bootstrap_ci, format_interval, format_summary, mean_with_ci


def test_interval_covers_the_true_mean_at_about_the_nominal_rate() -> None:
    rng = np.random.default_rng(1)
    covered = 0
    for trial in range(200):
        sample = rng.normal(3.0, 1.0, size=40)
        low, high = bootstrap_ci(sample, resamples=500, seed=trial)
        covered += low <= 3.0 <= high
    assert 0.88 <= covered / 200 <= 0.99


def test_interval_narrows_with_more_replications_and_is_deterministic() -> None:
    rng = np.random.default_rng(2)
    small, large = rng.normal(size=10), rng.normal(size=1000)
    width = lambda v: np.subtract(*bootstrap_ci(v)[::-1])  # noqa: E731
    assert width(large) < width(small) / 3
    assert bootstrap_ci(small, seed=5) == bootstrap_ci(small, seed=5)


def test_degenerate_inputs_give_honest_intervals() -> None:
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert bootstrap_ci([0.25]) == (0.25, 0.25)
    summary = mean_with_ci([1.0, float("nan"), 3.0])
    assert summary["n"] == 2 and summary["mean"] == 2.0 and summary["lo"] <= 2.0 <= summary["hi"]


def test_the_interval_is_the_percentile_bootstrap_of_the_seeded_resamples() -> None:
    values = np.random.default_rng(3).normal(size=25)
    # the definition, by hand: 2,000 resamples drawn by default_rng(seed), 2.5% and 97.5% quantiles of their means
    means = values[np.random.default_rng(7).integers(0, 25, size=(2000, 25))].mean(1)
    expected = np.quantile(means, [0.025, 0.975])
    assert np.allclose(bootstrap_ci(values, seed=7), expected, rtol=0, atol=1e-12)


def test_a_vector_statistic_leaves_undefined_resamples_out() -> None:
    # unit 0 has 1 of 2, unit 1 has 0 of 0: the share of unit 1 alone is undefined (0 / 0)
    counts = np.array([[1.0, 2.0], [0.0, 0.0]])

    def share_and_total(index: np.ndarray) -> np.ndarray:
        c = counts[index].sum(-2)
        with np.errstate(invalid="ignore"):
            return np.stack([c[..., 0] / c[..., 1], c[..., 1]], -1)

    low, high = bootstrap(share_and_total, 2, seed=0)
    assert (low[0], high[0]) == (0.5, 0.5)  # every defined resample has the share 0.5
    assert (low[1], high[1]) == (0.0, 4.0)  # totals 0, 2 and 4 all occur in 2,000 resamples
    one_low, one_high = bootstrap(share_and_total, 1)
    assert np.array_equal(one_low, [0.5, 2.0]) and np.array_equal(one_high, [0.5, 2.0])


def test_one_formatter_for_every_interval_cell() -> None:
    assert format_interval(0.5, 0.25, 0.756) == "0.50 [0.25, 0.76]"
    assert format_interval(0.1234, 0.1, 0.2, 3) == "0.123 [0.100, 0.200]"
    assert format_interval(-0.043, -0.07, 0.02, 3, sign=True) == "-0.043 [-0.070, +0.020]"
    assert format_interval(0.5, 0.404, 0.6, 0, percent=True) == "50% [40%, 60%]"
    assert format_interval(float("nan"), 0.1, 0.2, undefined="–") == "– [0.10, 0.20]"
    assert format_interval(float("nan"), 0.1, 0.2) == "nan [0.10, 0.20]"
    assert format_summary({"mean": 2.0, "lo": 1.0, "hi": 3.0, "n": 2}, 1) == "2.0 [1.0, 3.0]"
    assert format_summary({"share": 0.9, "lo": 0.8, "hi": 1.0}, centre="share") == "0.90 [0.80, 1.00]"
    assert format_summary(None) == "-" and format_summary(mean_with_ci([]), missing="n/a") == "n/a"
