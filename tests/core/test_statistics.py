"""The one Holm correction and p-value text every report uses (known answers)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from advaudit.core.statistics import format_p, holm


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
