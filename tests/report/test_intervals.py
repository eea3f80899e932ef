"""Bootstrap intervals: coverage of a known mean, degenerate inputs, determinism."""

from __future__ import annotations

import math

import numpy as np

from advaudit.report.intervals import bootstrap_ci, mean_with_ci


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
