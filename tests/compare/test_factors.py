"""Per-factor breakdown: circles tested as circles, p-values corrected over the factors, verdicts in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from advaudit.compare import compare_runs
from advaudit.compare.where.breakdowns import densest_fifth
from advaudit.core.statistics import kuiper_p_value, kuiper_uniform
from tests.compare.fixtures import write_worst_case


def test_kuiper_p_values_match_simulation_and_ignore_where_the_circle_is_cut() -> None:
    rng = np.random.default_rng(0)
    for n in (10, 60):
        simulated = np.array([kuiper_uniform(rng.uniform(size=n))[0] for _ in range(20000)])
        for v in np.quantile(simulated, [0.5, 0.9, 0.99]):
            tail = float((simulated >= v).mean())  # Stephens' approximation: within 10% of p, slightly conservative
            assert kuiper_p_value(v, n) == pytest.approx(tail, rel=0.1, abs=0.002) and kuiper_p_value(v, n) >= tail - 0.002
    points = rng.uniform(0.0, 0.3, size=25)
    assert kuiper_uniform(points)[0] == pytest.approx(kuiper_uniform(np.mod(points + 0.85, 1.0))[0])
    assert kuiper_uniform(points)[1] < 1e-6 and kuiper_uniform(rng.uniform(size=25))[1] > 0.01


def test_densest_fifth_wraps_on_a_circle_only() -> None:
    values = np.array([0.95, 0.97, 0.99, 0.01, 0.03, 0.5])
    centre, share = densest_fifth(values, periodic=True)
    assert share == pytest.approx(5 / 6) and min(centre, 1 - centre) < 0.05
    assert densest_fifth(values, periodic=False)[1] == pytest.approx(3 / 6)  # a box splits them


def test_per_factor_tests_are_corrected_over_factors_and_a_cluster_across_the_seam_is_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 60
    # camera_roll clustered around 0/360 deg (half at each end), the other factors uniform
    roll = np.mod(rng.normal(0, 15, size=n), 360)
    conditions = [{"camera_roll": float(roll[i]), "camera_elevation": float(rng.uniform(-90, 90)),
                   "light_azimuth": float(rng.uniform(0, 360)), "camera_distance": float(rng.uniform(1.5, 4))}
                  for i in range(n)]
    write_worst_case(tmp_path / "a", "A.pt", 0, np.full(n, 0.3), np.zeros(n, bool), worst_s=conditions)
    uniform = [{"camera_roll": float(rng.uniform(0, 360)), "camera_elevation": float(rng.uniform(-90, 90)),
                "light_azimuth": float(rng.uniform(0, 360)), "camera_distance": float(rng.uniform(1.5, 4))}
               for _ in range(n)]
    write_worst_case(tmp_path / "b", "B.pt", 0, np.full(n, 0.3), np.zeros(n, bool), worst_s=uniform)
    group = compare_runs([tmp_path], tmp_path / "out", replay=False)["groups"][0]
    rows = {r["factor"]: r for r in group["per_factor"] if r["target"] == "A.pt"}
    assert rows["camera_roll"]["test"] == "Kuiper" and rows["camera_elevation"]["test"] == "KS"
    searched = list(rows.values())
    expected = multipletests([r["p"] for r in searched], method="holm")[1]
    assert [r["p_holm"] for r in searched] == pytest.approx(list(expected))
    assert len(searched) == 4  # one test per searched factor present in the worst cases
    roll_row = rows["camera_roll"]
    assert roll_row["p_holm"] < 1e-6 and roll_row["share_peak"] > 0.7
    assert min(roll_row["peak"], 360 - roll_row["peak"]) < 20  # one region, around the seam
    assert "camera_roll: the worst cases concentrate" in roll_row["verdict"] and "Holm-corrected over" in roll_row["verdict"]
    assert rows["camera_elevation"]["verdict"].startswith("camera_elevation: no concentration detectable")
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "camera_roll: the worst cases concentrate" in text and "p (Holm)" in text
    # a checkpoint whose worst cases are uniform gets the sentence, not an empty line
    assert "- **B**: no factor shows a concentration of worst cases at 5% after correction." in text


def test_the_comparison_states_whether_its_design_is_paired(tmp_path: Path) -> None:
    worst, fail = np.linspace(0.1, 0.9, 10), np.zeros(10, bool)
    write_worst_case(tmp_path / "p" / "a", "A.pt", 0, worst, fail, selection="stratified")
    write_worst_case(tmp_path / "p" / "b", "B.pt", 0, worst, fail, selection="stratified")
    group = compare_runs([tmp_path / "p"], tmp_path / "out_p", replay=False)["groups"][0]
    assert group["design"].startswith("paired") and "audit.selection=stratified" in group["design"]
    assert "Design: paired" in (tmp_path / "out_p" / "comparison.md").read_text()
    write_worst_case(tmp_path / "u" / "a", "A.pt", 0, worst, fail, selection="best_per_class")
    write_worst_case(tmp_path / "u" / "b", "B.pt", 0, worst, fail, selection="best_per_class",
                     instances=list(range(5, 15)))
    group = compare_runs([tmp_path / "u"], tmp_path / "out_u", replay=False)["groups"][0]
    assert group["design"].startswith("not fully paired")
    assert any("audit.selection=stratified" in note for note in group["notes"])
