"""``make demo``: its findings are computed from the comparison's files and say so when nothing
separates the checkpoints; a shortened demo runs end to end and leaves report, PNGs and W&B runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from advaudit.demo.findings import FactorFinding, Findings, Trained, factor_finding, planted_shares, unseen_region, verdicts
from advaudit.demo.summary import summary_lines
from tests.conftest import REPO

CONTROL, WEAK = "/x/train/control/checkpoints/target.pt", "/x/train/roll_narrowed/checkpoints/target.pt"


def _comparison(p_holm: float, diff: float, weak_roll: np.ndarray, control_roll: np.ndarray) -> dict:
    """A comparison.json as advaudit.compare writes it: one RL group, control (a) vs roll_narrowed (b)."""
    rng = np.random.default_rng(0)
    per_factor = [{"target": t, "factor": f, "values": v.tolist()} for t, roll in ((CONTROL, control_roll), (WEAK, weak_roll))
                  for f, v in (("camera_roll", roll), ("camera_elevation", rng.uniform(-90, 90, len(roll))))]
    return {"groups": [{"audit": "worst_case", "method": "rl", "targets": {CONTROL: "control/target", WEAK: "roll_narrowed/target"},
                        "checkpoints": [{"target": CONTROL, "metric": "examine/E_T", "mean": 0.30},
                                        {"target": WEAK, "metric": "examine/E_T", "mean": 0.30 - diff}],
                        "pairs": [{"a": CONTROL, "b": WEAK, "metric": "examine/E_T", "diff": diff, "lo": diff - 0.05,
                                   "hi": diff + 0.05, "interval_over": "instances", "test": "Wilcoxon signed-rank",
                                   "p": p_holm, "p_holm": p_holm, "n_instances": 30}],
                        "per_factor": per_factor}]}


def test_unseen_region_is_the_part_of_the_range_left_out_at_either_end() -> None:
    assert unseen_region((0, 300), (0, 360)) == (300, 360)
    assert unseen_region((60, 360), (0, 360)) == (0, 60)
    assert unseen_region((30, 300), (0, 360)) is None   # two pieces: not one region


def test_a_separating_comparison_names_the_weaker_checkpoint_and_where_its_worst_cases_lie() -> None:
    rng = np.random.default_rng(1)
    control_roll = rng.uniform(0, 360, 30)
    comparison = _comparison(1e-4, 0.2, weak_roll=rng.uniform(300, 360, 30), control_roll=control_roll)
    [verdict] = verdicts(comparison, {"rl": "examine/E_T"})
    assert verdict.weaker == "roll_narrowed" and verdict.diff == pytest.approx(-0.2)   # weaker minus stronger
    assert (verdict.lo, verdict.hi) == (pytest.approx(-0.25), pytest.approx(-0.15))
    finding = factor_finding(comparison, "rl", "roll_narrowed")
    assert finding.factor == "camera_roll" and finding.p < 1e-6   # elevation is spread alike: not chosen
    planted_shares(finding, comparison, "roll_narrowed", (300, 360), (0, 360))
    assert finding.share_weaker == 1.0 and finding.share_volume == pytest.approx(1 / 6)
    assert finding.share_other == pytest.approx(float((control_roll >= 300).mean()))
    findings = Findings([Trained("control", CONTROL, 0.80, {}), Trained("roll_narrowed", WEAK, 0.79, {"camera_roll": (0, 300)})],
                        [verdict], "roll_narrowed", False, finding,
                        {"checkpoint": "roll_narrowed", "factor": "camera_roll", "region": (300, 360)})
    assert findings.found_planted
    lines = summary_lines(findings, Path("/x"), "demo-x")
    assert len(lines) == 4
    assert "1.0 points apart" in lines[0]
    assert lines[1].startswith("The audit says: roll_narrowed is the weaker checkpoint") and "p = 0.0001" in lines[1]
    assert "camera_roll" in lines[2] and "100% of them in 300-360" in lines[2] and "did not find" not in lines[2]


def test_a_comparison_that_does_not_separate_them_names_neither() -> None:
    rng = np.random.default_rng(2)
    comparison = _comparison(0.4, 0.01, weak_roll=rng.uniform(0, 360, 30), control_roll=rng.uniform(0, 360, 30))
    [verdict] = verdicts(comparison, {"rl": "examine/E_T"})
    assert verdict.weaker is None
    findings = Findings([Trained("control", CONTROL, 0.80, {}), Trained("roll_narrowed", WEAK, 0.79, {"camera_roll": (0, 300)})],
                        [verdict], None, False, None, {"checkpoint": "roll_narrowed", "factor": "camera_roll"})
    lines = summary_lines(findings, Path("/x"), "demo-x")
    assert not findings.found_planted and len(lines) == 3
    assert lines[1].startswith("The audit did not separate the two checkpoints") and "names neither" in lines[1]
    assert not any("weaker checkpoint" in line for line in lines)


def test_a_shortened_demo_runs_end_to_end_and_tracks_every_run_in_one_wandb_group(tmp_path: Path) -> None:
    """Tiny sizes (``--quick``), so its numbers mean nothing; what is checked is the plumbing: both
    multiruns, the paired comparison, the summary, the galleries and the offline W&B records."""
    from advaudit.report.wandb_offline import offline_runs

    root = tmp_path / "demo"
    env = {**os.environ, "WANDB_MODE": "offline", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "advaudit.demo", "--quick", "--launcher", "basic", "--out", str(root)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "$ python train.py -m experiment=demo/train_control,demo/train_roll_narrowed" in done.stdout
    assert "$ python examine.py -m experiment=demo/rl,demo/bo" in done.stdout
    summary = (root / "summary.txt").read_text().splitlines()
    assert done.stdout.rstrip().endswith(summary[-1]) and 3 <= len(summary) <= 4
    assert summary[0].startswith("Accuracy said: test accuracy control")
    record = json.loads((root / "demo.json").read_text())
    assert record["quick"] is True and record["summary"] == summary
    comparison = json.loads((root / "examine" / "comparison" / "comparison.json").read_text())
    assert {g["method"] for g in comparison["groups"]} == {"rl", "bo"}
    for group in comparison["groups"]:   # the same instances for both checkpoints: fully paired
        assert not any("different instances" in note for note in group["notes"])
        assert {r["n_instances"] for r in group["pairs"]} == {6}
    assert len(list((root / "examine").glob("*/worst_cases.png"))) == 4
    runs = offline_runs(root)
    assert {r["group"] for r in runs} == {"demo-demo"}
    by_type = {}
    for run in runs:
        by_type.setdefault(run["job_type"], []).append(run)
    assert sorted(by_type) == ["compare", "train", "worst_case"] and len(by_type["worst_case"]) == 4
    trained = {tuple(sorted(r["tags"])): r for r in by_type["train"]}
    assert len(trained) == 2
    factors = sorted(json.dumps(r["config"]["dataset"]["factors"]) for r in by_type["train"])
    assert factors == ['null', '{"camera_roll": [0, 300]}']
    for run in by_type["train"]:
        assert {"demo", "train", "seed=0"} <= set(run["tags"]) and "test/acc" in run["summary"]
