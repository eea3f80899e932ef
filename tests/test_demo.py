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

from advaudit.demo.findings import Findings, Trained, unseen_region, verdicts, where
from advaudit.demo.summary import summary_lines
from tests.conftest import REPO

CONTROL, WEAK = "/x/train/control/checkpoints/target.pt", "/x/train/roll_narrowed/checkpoints/target.pt"
WORLD = {"camera_roll": (0.0, 360.0), "camera_elevation": (-90.0, 90.0)}


def _group(method: str, p_holm: float, diff: float, rolls: dict[str, np.ndarray] | None = None) -> dict:
    """One group of a comparison.json as advaudit.compare writes it: control (a) vs roll_narrowed (b)."""
    rng = np.random.default_rng(0)
    per_factor = [{"target": t, "factor": f, "values": v.tolist()} for t, roll in (rolls or {}).items()
                  for f, v in (("camera_roll", roll), ("camera_elevation", rng.uniform(-90, 90, len(roll))))]
    return {"audit": "worst_case", "method": method,
            "checkpoints": [{"target": CONTROL, "metric": "examine/E_T", "mean": 0.60},
                            {"target": WEAK, "metric": "examine/E_T", "mean": 0.60 - diff}],
            "pairs": [{"a": CONTROL, "b": WEAK, "metric": "examine/E_T", "diff": diff, "lo": diff - 0.05,
                       "hi": diff + 0.05, "interval_over": "instances", "test": "Wilcoxon signed-rank",
                       "p": p_holm, "p_holm": p_holm, "n_instances": 30}],
            "per_factor": per_factor}


def _trained() -> list[Trained]:
    return [Trained("control", CONTROL, 0.780, {}), Trained("roll_narrowed", WEAK, 0.770, {"camera_roll": (0.0, 300.0)})]


def test_unseen_region_is_the_part_of_the_range_left_out_at_either_end() -> None:
    assert unseen_region((0, 300), (0, 360)) == (300, 360)
    assert unseen_region((60, 360), (0, 360)) == (0, 60)
    assert unseen_region((30, 300), (0, 360)) is None   # two pieces: not one region


def test_where_names_the_factor_and_the_fifth_of_its_range_where_one_checkpoints_worst_cases_gather() -> None:
    rng = np.random.default_rng(1)
    rolls = {CONTROL: rng.uniform(0, 360, 30), WEAK: np.concatenate([rng.uniform(300, 360, 24), rng.uniform(0, 288, 6)])}
    found = where({"groups": [_group("rl", 0.5, 0.0, rolls)]}, WORLD)
    assert found.factor == "camera_roll" and found.p < 1e-4          # elevation is spread alike: not chosen
    assert found.suspect == "roll_narrowed" and found.region == (288.0, 360.0)
    assert found.share_suspect == pytest.approx(24 / 30)
    assert found.share_other == pytest.approx(float((rolls[CONTROL] >= 288).mean()))
    alike = where({"groups": [_group("rl", 0.5, 0.0, {CONTROL: rng.uniform(0, 360, 30), WEAK: rng.uniform(0, 360, 30)})]}, WORLD)
    assert alike.p > 0.05


def test_on_a_circle_the_region_may_cross_the_seam_and_is_given_as_the_world_accepts_it() -> None:
    rng = np.random.default_rng(4)
    rolls = {CONTROL: rng.uniform(0, 360, 30), WEAK: np.mod(rng.uniform(-30, 30, 30), 360)}   # 330..360 and 0..30
    found = where({"groups": [_group("rl", 0.5, 0.0, rolls)]}, WORLD, circles={"camera_roll"})
    assert found.factor == "camera_roll" and found.test == "Kuiper" and found.p < 0.05
    assert found.suspect == "roll_narrowed" and found.region == (324.0, 396.0)   # the arc 324 -> 36 deg
    assert found.share_suspect == pytest.approx(1.0)


def test_the_check_names_the_weaker_checkpoint_and_the_summary_says_it_is_the_planted_one() -> None:
    rng = np.random.default_rng(2)
    rolls = {CONTROL: rng.uniform(0, 360, 30), WEAK: rng.uniform(300, 360, 30)}
    [severity] = verdicts({"groups": [_group("rl", 0.6, 0.01, rolls)]}, {"rl": "examine/E_T"})
    assert not severity.significant and severity.weaker is None and severity.lower == "roll_narrowed"
    [check] = verdicts({"groups": [_group("random", 1e-5, 0.11)]}, {"random": "examine/E_T"})
    assert check.weaker == "roll_narrowed" and check.diff == pytest.approx(-0.11)   # weaker minus stronger
    assert (check.lo, check.hi) == (pytest.approx(-0.16), pytest.approx(-0.06))
    findings = Findings(_trained(), [severity], where({"groups": [_group("rl", 0.6, 0.01, rolls)]}, WORLD), check,
                        {"checkpoint": "roll_narrowed", "factor": "camera_roll", "unseen": (300.0, 360.0)})
    assert findings.weaker == "roll_narrowed" and findings.found_planted
    lines = summary_lines(findings, Path("/x"), "demo-x")
    assert len(lines) == 4 and "1.0 points apart" in lines[0]
    assert "does not separate them" in lines[1] and "worst cases lie in different places, most in camera_roll" in lines[1]
    assert "100% of roll_narrowed's fall in 288-360" in lines[1]
    assert lines[2].startswith("Checked on held-out instances under new random conditions with camera_roll 288-360: "
                               "roll_narrowed is the weaker")
    assert "p = 1.0e-05" in lines[2] and "never saw in training" in lines[2]


def test_without_a_separating_check_the_summary_names_neither() -> None:
    rng = np.random.default_rng(3)
    rolls = {CONTROL: rng.uniform(0, 360, 30), WEAK: rng.uniform(300, 360, 30)}
    [check] = verdicts({"groups": [_group("random", 0.4, 0.01)]}, {"random": "examine/E_T"})
    findings = Findings(_trained(), [], where({"groups": [_group("rl", 0.6, 0.0, rolls)]}, WORLD), check,
                        {"checkpoint": "roll_narrowed", "factor": "camera_roll", "unseen": (300.0, 360.0)})
    assert findings.weaker is None and not findings.found_planted
    lines = summary_lines(findings, Path("/x"), "demo-x")
    assert "no difference detectable" in lines[2] and "names neither" in lines[2]
    assert not any("is the weaker" in line for line in lines)
    # the check pointing at the control instead: named, and said not to be the planted weakness
    [wrong] = verdicts({"groups": [_group("random", 1e-3, -0.1)]}, {"random": "examine/E_T"})
    findings.check = wrong
    assert findings.weaker == "control" and not findings.found_planted
    assert "so this run did not find it" in summary_lines(findings, Path("/x"), "demo-x")[2]


@pytest.mark.slow
def test_a_shortened_demo_runs_end_to_end_and_tracks_every_run_in_one_wandb_group(tmp_path: Path) -> None:
    """Tiny sizes (``--quick``), so its numbers mean nothing; what is checked is the plumbing: the
    three multiruns, the paired comparisons, the summary, the galleries and the offline W&B records.
    About a minute on an idle 2-core machine (ten W&B runs, three Hydra multiruns), hence slow."""
    from advaudit.report.wandb_offline import offline_runs

    root = tmp_path / "demo"
    env = {**os.environ, "WANDB_MODE": "offline", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "advaudit.demo", "--quick", "--launcher", "basic", "--out", str(root)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "$ python train.py -m experiment=demo/train_control,demo/train_roll_narrowed" in done.stdout
    assert "$ python examine.py -m experiment=demo/rl,demo/bo" in done.stdout
    assert "$ python examine.py -m experiment=demo/confirm" in done.stdout   # --quick runs the check whatever it found
    summary = (root / "summary.txt").read_text().splitlines()
    assert " ".join(done.stdout.split()).endswith(" ".join(summary[-1].split())) and 3 <= len(summary) <= 4
    assert summary[0].startswith("Accuracy said: test accuracy control")
    assert not any("is the weaker" in line for line in summary)   # untrained: nothing separates them
    again = subprocess.run([sys.executable, "-m", "advaudit.demo", "--summary-of", str(root)], cwd=REPO,
                           capture_output=True, text=True, env=env, timeout=120)
    assert again.stdout.split() == " ".join(summary).split()   # recomputed from the files alike
    record = json.loads((root / "demo.json").read_text())
    assert record["quick"] is True and record["summary"] == summary
    comparison = json.loads((root / "examine" / "comparison" / "comparison.json").read_text())
    assert {g["method"] for g in comparison["groups"]} == {"rl", "bo"}
    for group in comparison["groups"]:   # the same instances for both checkpoints: fully paired
        assert not any("different instances" in note for note in group["notes"])
        assert {r["n_instances"] for r in group["pairs"] if r["metric"] in ("examine/worst", "examine/E_T")} == {6}
    assert len(list((root / "examine").glob("*/worst_cases.png"))) == 4
    runs = offline_runs(root)
    assert {r["group"] for r in runs} == {"demo-demo"}
    by_type = {}
    for run in runs:
        by_type.setdefault(run["job_type"], []).append(run)
    assert sorted(by_type) == ["compare", "train", "worst_case"]
    assert len(by_type["worst_case"]) == 6 and len(by_type["compare"]) == 2   # 2 x (RL, BO, check); 2 sweeps
    trained = {tuple(sorted(r["tags"])): r for r in by_type["train"]}
    assert len(trained) == 2
    factors = sorted(json.dumps(r["config"]["dataset"]["factors"]) for r in by_type["train"])
    assert factors == ['null', '{"camera_roll": [0, 300]}']
    for run in by_type["train"]:
        assert {"demo", "train", "seed=0"} <= set(run["tags"]) and "test/acc" in run["summary"]
