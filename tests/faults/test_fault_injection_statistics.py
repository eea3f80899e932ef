"""The injected-fault detection statistic (advaudit.faults.statistics): shares pooled over the failing
tests of all training seeds, fault target minus control, with a bootstrap over seeds."""

from __future__ import annotations

import numpy as np
import pytest

from advaudit.faults.statistics import detection_over_control, pooled_shares

DIRECTIONS = {"pullover_to_coat": "", "coat_to_pullover": "reverse/"}


def test_pooled_shares_weigh_seeds_by_their_failing_tests() -> None:
    # seed A: fault 10 of 10 moved, control 2 of 10; seed B: fault 5 of 5, control 1 of 1
    counts = np.array([[[10, 10], [2, 10]], [[5, 5], [1, 1]]], dtype=float)
    result = pooled_shares(counts)
    assert result["fault"]["share"] == pytest.approx(1.0)
    assert result["control"]["share"] == pytest.approx(3 / 11)  # not the mean of 0.2 and 1.0
    assert result["difference"]["share"] == pytest.approx(1 - 3 / 11)
    assert result["failing"] == {"fault": 15, "control": 11}
    # resampling seeds: the control share ranges over 0.2 (A only), 3/11 and 1.0 (B only)
    assert result["control"]["lo"] == pytest.approx(0.2)
    assert result["control"]["hi"] == pytest.approx(1.0)
    assert result["fault"]["lo"] == result["fault"]["hi"] == pytest.approx(1.0)


def test_control_without_failing_tests_has_no_share() -> None:
    result = pooled_shares(np.array([[[3, 4], [0, 0]], [[1, 2], [0, 0]]], dtype=float))
    assert result["fault"]["share"] == pytest.approx(4 / 6)
    assert result["control"] is None and result["difference"] is None


def test_detection_pairs_each_fault_target_with_the_control_of_its_seed() -> None:
    key = "faults/generator/feature/brightness/moved_share"
    per_seed = {"brightness_seed1": {key: 1.0, f"{key}/n": 20}, "clean_seed1": {key: 0.5, f"{key}/n": 4},
                "brightness_seed2": {key: 0.9, f"{key}/n": 10}, "clean_seed2": {key: None, f"{key}/n": None},
                "brightness_seed3": {key: 1.0, f"{key}/n": 5}}  # seed 3 has no control: left out
    detection = detection_over_control(per_seed, [1, 2, 3], ["brightness", "size"], DIRECTIONS)
    row = detection["brightness/pullover_to_coat/generator"]
    assert row["seeds"] == 2
    assert row["fault"]["share"] == pytest.approx(29 / 30)
    assert row["control"]["share"] == pytest.approx(0.5)
    assert row["paired"]["n"] == 1 and row["paired"]["mean"] == pytest.approx(0.5)
