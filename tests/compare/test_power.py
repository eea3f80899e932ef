"""Power of the paired comparison by resampling a pilot: known answers, the tests it must equal, the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.stats import wilcoxon
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from advaudit.compare import compare_runs
from advaudit.compare.metrics import Metric
from advaudit.compare.power import (Pilot, estimate_power, instances_needed, mcnemar_p, pair_power, pilot_from_pairs,
                                    wilcoxon_p, wilson)
from advaudit.compare.differences import _wilcoxon, paired_test
from advaudit.errors import AdvauditError
from tests.compare.fixtures import write_worst_case


def _pairs(a: np.ndarray, b: np.ndarray) -> pd.DataFrame:
    """Rows (instance, seed, a, b) from ``[I, K]`` values of two checkpoints."""
    n, k = a.shape
    return pd.DataFrame({"instance": np.repeat(np.arange(n), k), "seed": np.tile(np.arange(k), n),
                         "a": a.ravel(), "b": b.ravel()})


def _continuous(shift: float, n: int = 40, k: int = 1, noise: float = 0.1, seed: int = 0) -> Pilot:
    rng = np.random.default_rng(seed)
    b = rng.uniform(0.2, 0.8, (n, 1)).repeat(k, axis=1)
    return pilot_from_pairs(_pairs(b + shift + rng.normal(0, noise, (n, k)), b), binary=False)


def test_large_effect_has_power_near_one_at_small_n() -> None:
    pilot = _continuous(shift=-0.3, noise=0.05)
    estimate = estimate_power(pilot, n_instances=10, replicates=400)
    assert estimate.power > 0.98 and estimate.lo > 0.95
    # Wilcoxon's exact two-sided p at n = 5 with every sign alike is 2 / 2^5 = 0.0625 > 0.05:
    # no design of 5 instances can reject, however large the effect; 6 instances always do (0.031)
    assert estimate_power(pilot, 5, replicates=200).power == 0.0
    assert estimate_power(pilot, 6, replicates=200).power == 1.0
    assert instances_needed(pilot, replicates=200) == 6


def test_zero_effect_has_power_near_alpha() -> None:
    # a pilot whose differences are symmetric about 0: the null hypothesis holds in the resampled world
    rng = np.random.default_rng(1)
    d = rng.normal(0, 0.1, 200)
    b = rng.uniform(0.2, 0.8, 400)
    pilot = pilot_from_pairs(_pairs((b + np.concatenate([d, -d]))[:, None], b[:, None]), binary=False)
    estimate = estimate_power(pilot, n_instances=40, replicates=2000, seed=3)
    assert 0.03 < estimate.power < 0.075 and estimate.lo < 0.05 < estimate.hi
    assert instances_needed(pilot, replicates=200, n_max=64) is None


def test_power_grows_with_instances_and_with_seeds_when_seeds_are_noisy() -> None:
    pilot = _continuous(shift=-0.04, n=60, k=4, noise=0.15)
    powers = [estimate_power(pilot, n, 1, replicates=400).power for n in (8, 32, 128)]
    assert powers[0] < powers[1] < powers[2] and powers[2] > 0.9
    # averaging an instance over more examinations removes seed noise: power rises with k at fixed n
    by_seeds = [estimate_power(pilot, 32, k, replicates=400).power for k in (1, 4)]
    assert by_seeds[0] + 0.15 < by_seeds[1]


def test_deterministic_with_a_seed_and_different_without() -> None:
    pilot = _continuous(shift=-0.03, noise=0.1)
    first = estimate_power(pilot, 20, 2, replicates=300, seed=7)
    assert first == estimate_power(pilot, 20, 2, replicates=300, seed=7)
    assert first.power != estimate_power(pilot, 20, 2, replicates=300, seed=8).power
    assert instances_needed(pilot, replicates=100, seed=7) == instances_needed(pilot, replicates=100, seed=7)


def test_resampled_tests_equal_the_comparisons_tests() -> None:
    rng = np.random.default_rng(2)
    diffs = np.round(rng.normal(0.05, 0.2, (8, 9)), 1)     # ties and zeros included
    diffs[3] = 0.0
    tied = [len(np.unique(np.abs(d))) < len(d) or (d == 0).any() for d in diffs]
    untied = np.random.default_rng(3).normal(0.05, 0.2, (4, 9))
    assert wilcoxon_p(untied) == pytest.approx([_wilcoxon(d)["p"] for d in untied])
    # with ties or zeros at n <= 13 the power estimate takes the normal approximation (the verdict: a permutation test)
    assert wilcoxon_p(diffs) == pytest.approx([
        (_wilcoxon(d)["p"] if not t else (1.0 if not d.any() else float(wilcoxon(
            d, zero_method="wilcox", method="asymptotic").pvalue))) for d, t in zip(diffs, tied)])
    assert any(tied)
    metric = Metric("examine/failure_rate", False, "failed", binary=True)
    for only_a, only_b in [(0, 0), (5, 0), (3, 9), (20, 10), (12, 30)]:
        a = np.r_[np.ones(only_a), np.zeros(only_b), np.ones(4), np.zeros(7)]
        b = np.r_[np.zeros(only_a), np.ones(only_b), np.ones(4), np.zeros(7)]
        expected = paired_test(pd.DataFrame({"instance": range(len(a)), "a": a, "b": b}), np.array([]), metric)["p"]
        assert mcnemar_p(np.array([only_a]), np.array([only_b]))[0] == pytest.approx(expected)
    assert mcnemar_p(np.array([20]), np.array([10]))[0] == pytest.approx(
        mcnemar([[0, 20], [10, 0]], exact=False, correction=True).pvalue)


def test_binary_power_counts_instance_by_seed_pairs() -> None:
    # A fails on 40% of (instance, seed) pairs where B does not, never the other way
    a = ((np.arange(50)[:, None] + np.arange(3)[None, :]) % 5 < 2).astype(float)
    pilot = pilot_from_pairs(_pairs(a, np.zeros((50, 3))), binary=True)
    # 5 instances x 1 seed: at most 5 discordant pairs, exact p >= 0.0625: never significant
    assert estimate_power(pilot, 5, 1, replicates=200).power == 0.0
    assert estimate_power(pilot, 10, 3, replicates=300).power > 0.95   # ~12 discordant pairs, all one way


def test_wilson_interval_known_answer() -> None:
    lo, hi = wilson(8, 10)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_bad_designs_are_one_clear_error() -> None:
    with pytest.raises(AdvauditError, match="at least 2 paired instances"):
        estimate_power(_continuous(-0.1, n=1), 10)
    with pytest.raises(AdvauditError, match="must be >= 1"):
        estimate_power(_continuous(-0.1), 0)


def test_pair_power_words() -> None:
    strong = pair_power(_pairs(np.full((12, 1), 0.2) + np.linspace(0, 0.01, 12)[:, None], np.full((12, 1), 0.5)),
                        binary=False, replicates=200)
    assert strong["power"] == 1.0 and strong["n_for_80"] == 6 and strong["power_k"] == 1
    assert strong["power_words"].startswith("Power: adequate; with 12 paired instances x 1 seed")
    rng = np.random.default_rng(5)
    d = rng.normal(0, 0.1, 10)
    none = pair_power(_pairs((0.5 + np.r_[d, -d])[:, None], np.full((20, 1), 0.5)), binary=False, replicates=200,
                      n_max=64)
    assert none["power"] < 0.2 and none["n_for_80"] is None
    assert "under-powered" in none["power_words"] and "even 64 paired instances would not reach 80%" in none["power_words"]


def test_comparison_states_power_for_each_paired_headline(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    base = rng.uniform(0.3, 0.7, 8)
    no_fail = np.zeros(8, bool)
    write_worst_case(tmp_path / "weak", "ckpt/weak/target.pt", 0, base - 0.03 + rng.normal(0, 0.05, 8), no_fail)
    write_worst_case(tmp_path / "strong", "ckpt/strong/target.pt", 0, base, no_fail)
    group = compare_runs([tmp_path], tmp_path / "out", replay=False)["groups"][0]
    worst = next(r for r in group["pairs"] if r["metric"] == "examine/E_T")    # the primary question's power
    assert "power" not in next(r for r in group["pairs"] if r["metric"] == "examine/worst")
    assert worst["power_n"] == 8 and worst["power_k"] == 1 and 0 <= worst["power"] < 0.8
    assert "Power: under-powered; with 8 paired instances x 1 seed" in worst["verdict"]
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "| power | instances for 80% |" in text and "Power: under-powered" in text
