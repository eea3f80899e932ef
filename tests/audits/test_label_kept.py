"""Validity where it matters: the report measures the worst cases themselves, by the checks and a judge."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import worst_case_overrides


def test_an_independent_judge_measures_the_worst_cases(make_cfg, tiny_shapes_target: Path) -> None:
    from advaudit.tasks import examine

    # the target as its own judge: it "still classifies correctly" exactly the worst cases it got right
    result = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, f"audit.judge={tiny_shapes_target}")))
    rows = [r for r in result["per_instance"] if r["worst"] is not None]
    expected = np.mean([r["worst_predicted"] == r["class"] for r in rows])
    assert result["examine/judge_correct_worst"] == pytest.approx(expected)
    # per instance, the same verdict: the judge's answer on that instance's worst valid case
    assert [r["judge_correct"] for r in rows] == [r["worst_predicted"] == r["class"] for r in rows]
    assert result["examine/judge_correct_worst/lo"] <= expected <= result["examine/judge_correct_worst/hi"]
    assert 0.0 <= result["examine/judge_correct_random"] <= 1.0
    assert 0.0 <= result["examine/worst_raw_valid"] <= 1.0 and 0.0 <= result["examine/final_invalid_share"] <= 1.0
    report = Path(result["report"]).read_text()
    assert "the independent judge" in report and "of the worst valid cases correctly" in report


def test_without_a_judge_the_report_says_label_keeping_is_not_measured(make_cfg, tiny_shapes_target: Path) -> None:
    from advaudit.tasks import examine

    result = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target)))
    assert "examine/judge_correct_worst" not in result and "examine/worst_raw_valid" in result
    assert all(r["judge_correct"] is None for r in result["per_instance"])
    report = Path(result["report"]).read_text()
    assert "is not measured" in report and "reference judge in the check: `" in report
    assert result["validity_reference"].endswith("reference_judge.pt")


def test_the_report_says_when_no_reference_judge_is_in_the_check(make_cfg, tiny_shapes_target: Path) -> None:
    from advaudit.tasks import examine

    result = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, "audit.validity.reference=null")))
    assert result["validity_reference"] is None and "reference" not in result["validity_checks"]
    assert "no reference judge in the check" in Path(result["report"]).read_text()
