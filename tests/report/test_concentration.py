"""Concentration of late proposals in a region, on made-up run dirs whose answer is known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advaudit.core.records import append_jsonl, write_json
from advaudit.errors import AdvauditError
from advaudit.report.concentration import Region, aggregate, late_window, main, run_concentration

WORLD = {"_target_": "advaudit.worlds.shapes.ShapeWorld", "image_size": 16, "device": "cpu",
         "factors": {"camera_elevation": [-90, 90]}}
ELEVATION = 10  # camera_elevation's column in s; bounds [-90, 90]


def make_run(root: Path, name: str, inside_per_step: list[list[int]], q: int, examiner: str = "rl",
             target: str = "weak/checkpoints/target.pt", seed: int = 0) -> Path:
    """A run dir whose step t proposes, for instance i, ``inside_per_step[t][i]`` of its q
    conditions at elevation 60 (outside [-30, 30]) and the rest at elevation 0."""
    run = root / name
    run.mkdir(parents=True)
    for step, counts in enumerate(inside_per_step):
        records = []
        for i, k in enumerate(counts):
            s = np.zeros((q, 12))
            s[:, 8] = 2.0
            s[:k, ELEVATION] = 60.0
            records.append({"step": step, "instance": 100 + i, "label": i, "s": s.tolist(),
                            "true_prob": [0.1] * k + [0.9] * (q - k), "predicted": [0] * q})
        append_jsonl(run / "steps.jsonl", records)
    write_json(run / "result.json", {"status": "ok", "config": {"world": WORLD, "target": target, "seed": seed,
                                                                "examiner": {"name": examiner}}})
    return run


def test_late_share_counts_only_the_window_and_compares_with_volume(tmp_path: Path) -> None:
    q = 4
    # 3 steps, 2 instances: early steps all inside, last step 1/4 and 3/4 inside
    run = make_run(tmp_path, "a", [[4, 4], [4, 4], [1, 3]], q)
    region = Region("camera_elevation", -30, 30, outside=True)
    out = run_concentration(run, region, last=4, unit="queries")  # the last 4 queries = the last step
    assert out["window_first_step"] == 2 and out["late_proposals"] == 8
    assert [r["share"] for r in out["per_instance"]] == [0.25, 0.75]
    assert out["pooled_share"] == pytest.approx(0.5)
    assert out["volume_share"] == pytest.approx(2 / 3)  # outside [-30, 30] of [-90, 90]
    assert out["ratio"] == pytest.approx(0.75)
    assert out["late_true_prob"] == pytest.approx(np.mean([0.1 * 0.25 + 0.9 * 0.75, 0.1 * 0.75 + 0.9 * 0.25]))
    wider = run_concentration(run, region, last=2, unit="iterations")  # steps 1 and 2
    assert wider["pooled_share"] == pytest.approx((8 + 4) / 16)


def test_region_volume_inside_and_window_rounding() -> None:
    assert Region("f", 0, 30).volume_share(-90, 90) == pytest.approx(1 / 6)
    assert Region("f", 80, 200).volume_share(-90, 90) == pytest.approx(10 / 180)  # clipped to the bounds
    assert late_window(list(range(10)), q=32, last=40, unit="queries") == 8  # 40 queries -> 2 steps of 32
    assert late_window(list(range(10)), q=1, last=3, unit="iterations") == 7
    with pytest.raises(AdvauditError, match="not searched"):
        Region("f", 0, 1).volume_share(2.5, 2.5)


def test_aggregate_over_seeds_against_random_and_control(tmp_path: Path) -> None:
    region = Region("camera_elevation", -30, 30, outside=True)
    runs = []
    for seed, k in enumerate([4, 2]):  # weak target, rl: shares 1.0 and 0.5 over two seeds
        runs.append(run_concentration(make_run(tmp_path, f"w{seed}", [[k, k]], 4, seed=seed), region, 4))
    runs.append(run_concentration(make_run(tmp_path, "wr", [[1, 1]], 4, examiner="random"), region, 4))
    runs.append(run_concentration(make_run(tmp_path, "c", [[1, 2]], 4, target="control/checkpoints/target.pt"),
                                  region, 4))
    rows = {(r["target"].split("/")[0], r["examiner"]): r for r in aggregate(runs, control="control")}
    weak = rows[("weak", "rl")]
    assert weak["seeds"] == 2 and weak["share"] == pytest.approx(0.75)
    assert weak["share_lo"] == pytest.approx(0.5) and weak["share_hi"] == pytest.approx(1.0)
    assert weak["ratio_to_random"] == pytest.approx(3.0)
    assert weak["ratio_to_control"] == pytest.approx(0.75 / 0.375)
    assert weak["ratio_to_volume"] == pytest.approx(0.75 / (2 / 3))


def test_cli_writes_the_table_and_refuses_unknown_factors(tmp_path: Path, capsys) -> None:
    make_run(tmp_path / "runs", "a", [[4, 0]], 4)
    main([str(tmp_path / "runs"), "--factor", "camera_elevation", "--low", "-30", "--high", "30", "--outside",
          "--out", str(tmp_path / "report")])
    assert "| weak | rl | 1 | 0.500 [0.500, 0.500]" in capsys.readouterr().out
    report = json.loads((tmp_path / "report" / "concentration.json").read_text())
    late = report["runs"][0]["late_values"]  # what the plot histograms: the factor at each late proposal
    assert len(late) == report["runs"][0]["late_proposals"] and report["runs"][0]["factor_bounds"][0] < min(late)
    assert (tmp_path / "report" / "concentration.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(AdvauditError, match="not a factor of this world"):
        main([str(tmp_path / "runs"), "--factor", "zoom", "--low", "0", "--high", "1"])


def test_error_rates_inside_and_outside_count_valid_proposals_only(tmp_path: Path) -> None:
    run = make_run(tmp_path, "e", [[2, 2]], 4)
    lines = (run / "steps.jsonl").read_text().splitlines()
    import json
    records = [json.loads(line) for line in lines]
    records[0]["predicted"] = [1, 1, 0, 0]   # label 0: both inside proposals wrong, outside right
    records[1]["predicted"] = [0, 0, 0, 0]   # label 1: all wrong ...
    records[1]["valid"] = [True, False, True, False]  # ... but only one inside, one outside valid
    (run / "steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = run_concentration(run, Region("camera_elevation", -30, 30, outside=True), last=4)
    assert out["error_rate_inside"] == pytest.approx(3 / 3)
    assert out["error_rate_outside"] == pytest.approx(1 / 3)


ROLL = 11  # camera_roll's column in s; bounds [0, 360], a circle


def test_a_region_across_the_seam_of_a_circle_is_one_arc(tmp_path: Path) -> None:
    across = Region("camera_roll", 315, 45)  # the quarter turn around 0/360 deg
    circle = (0.0, 360.0)
    values = np.array([350.0, 10.0, 0.0, 360.0, 45.0, 100.0, 300.0])
    assert across.contains(values, circle).tolist() == [True, True, True, True, True, False, False]
    assert across.volume_share(0, 360, periodic=True) == pytest.approx(0.25)
    assert Region("camera_roll", -45, 45).contains(values, circle).tolist() == across.contains(values, circle).tolist()
    assert Region("camera_roll", 315, 45, outside=True).volume_share(0, 360, periodic=True) == pytest.approx(0.75)
    assert across.spans(0, 360, periodic=True) == [(315.0, 360.0), (0.0, 45.0)]
    assert Region("camera_roll", 0, 240, outside=True).spans(0, 360, periodic=True) == [(240.0, 360.0)]
    with pytest.raises(AdvauditError, match="not periodic"):
        Region("camera_elevation", 30, -30).volume_share(-90, 90)
    # a run whose late proposals sit at 350 and 10 deg: all inside the one arc; a box would split them
    run = tmp_path / "roll"
    run.mkdir()
    records = []
    for i, roll in enumerate([[350.0, 10.0, 5.0, 200.0], [355.0, 2.0, 359.0, 1.0]]):
        s = np.zeros((4, 12))
        s[:, 8], s[:, ROLL] = 2.0, roll
        records.append({"step": 0, "instance": i, "label": i, "s": s.tolist(), "true_prob": [0.1] * 4,
                        "predicted": [i] * 4})
    append_jsonl(run / "steps.jsonl", records)
    write_json(run / "result.json", {"status": "ok", "config": {"world": WORLD, "target": "t", "seed": 0,
                                                                "examiner": {"name": "bo"}}})
    out = run_concentration(run, across, last=4)
    assert out["periodic"] and out["volume_share"] == pytest.approx(0.25)
    assert [r["share"] for r in out["per_instance"]] == [0.75, 1.0] and out["ratio"] == pytest.approx(3.5)
