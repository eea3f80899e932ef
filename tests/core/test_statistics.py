"""The one Holm correction, p-value text and paired and two-sample tests every report uses (known answers)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.stats import t as student

from advaudit.core.statistics import format_p, holm, mcnemar_test, paired_mean_test, welch_test


@dataclass
class FactorLike:
    p: float
    p_holm: float = float("nan")


def test_holm_corrects_the_finite_p_values_of_dicts_and_objects_alike() -> None:
    rows = [{"p": 0.01}, {"p": 0.04}, {"p": float("nan")}, {"p": 0.03}]
    holm(rows)                                  # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, max(2 x 0.03, 0.03), max(.., 0.04)
    assert [r["p_holm"] for r in rows[:2]] + [rows[3]["p_holm"]] == pytest.approx([0.03, 0.06, 0.06])
    assert math.isnan(rows[2]["p_holm"])        # no test: out of the family, NaN
    tests = holm([FactorLike(0.01), FactorLike(0.04), FactorLike(0.03)])
    assert [t.p_holm for t in tests] == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []


def test_p_values_read_the_same_everywhere() -> None:
    assert [format_p(p) for p in (0.5, 0.0123, 1e-4, 3.2e-6, float("nan"))] == ["0.5", "0.012", "0.0001", "3.2e-06",
                                                                               "nan"]


def test_welch_over_files_follows_welchs_formula_and_says_when_it_cannot_test() -> None:
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 7.0])
    va, vb = x.var(ddof=1) / 3, y.var(ddof=1) / 3                  # 1/3 and 7/9
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)                # Welch-Satterthwaite: 3.45
    t_value = (x.mean() - y.mean()) / math.sqrt(va + vb)             # -3.16
    found = welch_test(x, y)
    assert found["diff"] == pytest.approx(-10 / 3) and found["n"] == [3, 3]
    assert found["p"] == pytest.approx(2 * student.sf(abs(t_value), df))           # 0.042
    half = student.ppf(0.975, df) * math.sqrt(va + vb)
    assert (found["lo"], found["hi"]) == pytest.approx((-10 / 3 - half, -10 / 3 + half))
    one_file = welch_test([1.0, 2.0], [1.0])                           # fewer than two files a side: no test
    assert (one_file["lo"], one_file["hi"]) == (0.5, 0.5) and math.isnan(one_file["p"])
    assert welch_test([1.0, 1.0], [1.0, 1.0])["p"] == 1.0             # no spread, no difference


def test_mcnemar_is_exact_below_25_discordant_pairs_and_chi_square_with_correction_above() -> None:
    exact = mcnemar_test(np.r_[np.ones(5), np.zeros(5)], np.zeros(10))
    assert exact["test"] == "McNemar (exact)" and (exact["only_a"], exact["only_b"]) == (5, 0)
    assert exact["p"] == pytest.approx(2 * 0.5 ** 5)                  # two-sided binomial, 5 of 5
    a, b = np.r_[np.ones(20), np.zeros(10), np.ones(3)], np.r_[np.zeros(20), np.ones(10), np.ones(3)]
    approx = mcnemar_test(a, b)
    assert approx["test"] == "McNemar" and approx["statistic"] == pytest.approx((20 - 10 - 1) ** 2 / 30)
    assert approx["p"] == pytest.approx(0.1003, abs=1e-4)             # chi-square(1) beyond 2.7
    assert mcnemar_test(np.ones(4), np.ones(4))["p"] == 1.0            # no discordant pair


def test_paired_mean_test_drops_missing_pairs_and_reads_no_difference_as_p_1() -> None:
    found = paired_mean_test([1.0, 2.0, float("nan"), 4.0], [1.0, 2.0, 3.0, 4.0])
    assert found == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "p": 1.0, "n": 3}
    shifted = paired_mean_test(np.arange(20.0) + 1.0, np.arange(20.0))
    assert shifted["diff"] == pytest.approx(1.0) and shifted["p"] < 1e-4 and shifted["n"] == 20
