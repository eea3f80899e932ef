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

from advaudit.demo.findings import Findings, Located, Trained, overlaps, read_answers, read_where, unseen_region
from advaudit.demo.summary import summary_lines
from tests.conftest import REPO

CONTROL, WEAK = "/x/train/control/checkpoints/target.pt", "/x/train/roll_narrowed/checkpoints/target.pt"
NAMES = {CONTROL: "control/target", WEAK: "roll_narrowed/target"}
PLANTED = {"checkpoint": "roll_narrowed", "factor": "camera_roll", "unseen": (240.0, 360.0), "period": (0.0, 360.0)}


def _group(method: str, status: str, weaker: str | None, confirmed: tuple[str, list[float]] | None = None,
           fifth: tuple[str, str, float, float] | None = None, conflicts: bool = False) -> dict:
    """One worst-case group of a comparison.json as advaudit.compare writes it: its first answer and
    where section (``confirmed``: factor and region where roll_narrowed was confirmed weaker; ``fifth``:
    a said per-fifth row, factor, loser, low, high)."""
    secondary = [{"metric": "examine/worst", "relation": "conflicts" if conflicts else "floor",
                  "text": "worst case: control weaker (...)." if conflicts else "worst case: both at the floor."}]
    pair = {"a": "control/target", "b": "roll_narrowed/target", "tested_words": "Their worst cases lie differently.",
            "confirmation": None}
    if confirmed:
        pair["confirmation"] = {"a": "control/target", "b": "roll_narrowed/target", "factor": confirmed[0],
                                "region": confirmed[1], "weaker": "roll_narrowed/target",
                                "words": f"In {confirmed[0]} roll_narrowed/target is weaker (held out)."}
    rows = []
    if fifth:
        factor, loser, low, high = fifth
        rows.append({"a": "control/target", "b": "roll_narrowed/target", "factor": factor, "low": low, "high": high,
                     "diff": 0.1 if loser == "roll_narrowed/target" else -0.1, "said": True,
                     "words": f"{loser} loses 10 points more at {factor} {low:g}-{high:g}."})
    rows.append({"a": "control/target", "b": "roll_narrowed/target", "factor": "sun_energy", "low": 1, "high": 1.8,
                 "diff": 0.02, "said": False, "words": ""})
    return {"audit": "worst_case", "method": method, "targets": NAMES,
            "answers": [{"a": CONTROL, "b": WEAK, "metric": "examine/E_T", "status": status,
                         "weaker": {"control": CONTROL, "roll_narrowed": WEAK}.get(weaker or ""),
                         "text": f"{method} answer: {status}.", "secondary": secondary}],
            "where": {"pairs": [pair], "sensitivity": {"pairs": rows},
                      "sentences": [pair["tested_words"]] + ([pair["confirmation"]["words"]] if confirmed else [])
                      + [r["words"] for r in rows if r["said"]]}}


def _findings(*groups: dict) -> Findings:
    comparison = {"groups": list(groups)}
    located, words = read_where(comparison)
    trained = [Trained("control", CONTROL, 0.780, {}), Trained("roll_narrowed", WEAK, 0.770, {"camera_roll": (0.0, 240.0)})]
    return Findings(trained, read_answers(comparison), located, words, dict(PLANTED))


def test_unseen_region_is_the_part_of_the_range_left_out_at_either_end() -> None:
    assert unseen_region((0, 240), (0, 360)) == (240, 360)
    assert unseen_region((60, 360), (0, 360)) == (0, 60)
    assert unseen_region((30, 300), (0, 360)) is None   # two pieces: not one region


def test_a_region_across_a_circles_seam_overlaps_either_end() -> None:
    assert overlaps((324, 396), (0, 20), (0, 360)) and overlaps((324, 36), (0, 20), (0, 360))
    assert overlaps((324, 396), (330, 360), (0, 360))
    assert not overlaps((324, 396), (100, 200), (0, 360)) and not overlaps((0, 72), (240, 360), (0, 360))
    assert not overlaps((324, 396), (0, 20), None) and overlaps((200, 260), (240, 360), None)


def test_the_primary_verdict_and_a_confirmed_region_in_the_planted_factor_find_the_planted_weakness() -> None:
    findings = _findings(_group("rl", "weaker", "roll_narrowed", confirmed=("camera_roll", [252.0, 324.0])),
                         _group("bo", "none", None, fifth=("camera_roll", "roll_narrowed/target", 288.0, 360.0)))
    assert findings.weaker == "roll_narrowed" and findings.found_planted
    assert [p.how for p in findings.located] == ["confirmed", "per fifth"]
    lines = summary_lines(findings, Path("/x"), "demo-x")
    assert len(lines) == 5 and "1.0 points apart" in lines[0]
    assert lines[1].startswith("The comparison's answer (each examiner's primary question, as its config declares it): roll_narrowed is "
                               "weaker. RL: rl answer: weaker. BO: bo answer: none.")
    assert "Conflicting" not in lines[1]
    assert lines[2].startswith("Where: In camera_roll roll_narrowed/target is weaker (held out). roll_narrowed/target "
                               "loses 10 points more")
    assert lines[3] == "That is the planted weakness: roll_narrowed never saw camera_roll 240-360 in training."


def test_without_a_primary_verdict_or_in_another_factor_the_planted_weakness_is_not_claimed() -> None:
    located_only = _findings(_group("rl", "none", None, confirmed=("camera_roll", [252.0, 324.0])))
    assert located_only.weaker is None and not located_only.found_planted
    assert "no verdict" in summary_lines(located_only, Path("/x"), "demo-x")[1]
    elsewhere = _findings(_group("rl", "weaker", "roll_narrowed", confirmed=("camera_elevation", [30.0, 54.0])))
    assert elsewhere.weaker == "roll_narrowed" and not elsewhere.found_planted
    lines = summary_lines(elsewhere, Path("/x"), "demo-x")
    assert "was not both named and located" in lines[3]
    wrong_way = _findings(_group("rl", "weaker", "control", fifth=("camera_roll", "control/target", 288.0, 360.0)))
    assert wrong_way.weaker == "control" and not wrong_way.found_planted
    disagree = _findings(_group("rl", "weaker", "roll_narrowed"), _group("bo", "weaker", "control", conflicts=True))
    assert disagree.weaker is None
    lines = summary_lines(disagree, Path("/x"), "demo-x")
    assert "the examiners disagree" in lines[1] and "Conflicting: worst case: control weaker" in lines[1]
    assert lines[2] == "Where: Their worst cases lie differently."   # the where section's own words when nothing located


def test_the_where_line_never_cuts_the_planted_factor_behind_others() -> None:
    """Four per-fifth places in other factors come first in the comparison; the line keeps three, and
    the planted factor's place is among them."""
    findings = _findings(_group("rl", "weaker", "roll_narrowed"))
    others = [Located("per fifth", "rl", "roll_narrowed", f, (0.0, 1.0), f"{f} fifth.")
              for f in ("sun_energy", "camera_elevation", "object_hue", "scale")]
    planted = Located("per fifth", "bo", "roll_narrowed", "camera_roll", (288.0, 360.0), "camera_roll fifth.")
    findings.located = others + [planted]
    line = summary_lines(findings, Path("/x"), "demo-x")[2]
    assert line.startswith("Where: camera_roll fifth. sun_energy fifth.") and line.endswith("(2 more in the report)")


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
    summary = (root / "summary.txt").read_text().splitlines()
    assert " ".join(done.stdout.split()).endswith(" ".join(summary[-1].split())) and 4 <= len(summary) <= 5
    assert summary[0].startswith("Accuracy said: test accuracy control")
    assert "That is the planted weakness" not in " ".join(summary)   # untrained: nothing to find
    again = subprocess.run([sys.executable, "-m", "advaudit.demo", "--summary-of", str(root)], cwd=REPO,
                           capture_output=True, text=True, env=env, timeout=120)
    assert again.stdout.split() == " ".join(summary).split()   # recomputed from the files alike
    record = json.loads((root / "demo.json").read_text())
    assert record["quick"] is True and record["summary"] == summary
    comparison = json.loads((root / "examine" / "comparison" / "comparison.json").read_text())
    assert {g["method"] for g in comparison["groups"]} == {"rl", "bo"}
    assert all(g["answers"] and g["where"]["sentences"] for g in comparison["groups"])   # the shared code's answer
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
    assert len(by_type["worst_case"]) == 4 and len(by_type["compare"]) == 1   # 2 x (RL, BO); one sweep
    trained = {tuple(sorted(r["tags"])): r for r in by_type["train"]}
    assert len(trained) == 2
    factors = sorted(json.dumps(r["config"]["dataset"]["factors"]) for r in by_type["train"])
    assert factors == ['null', '{"camera_roll": [0, 240]}']
    for run in by_type["train"]:
        assert {"demo", "train", "seed=0"} <= set(run["tags"]) and "test/acc" in run["summary"]


def test_the_shipped_checkpoints_load_safely_match_their_record_and_install_as_a_training_run(tmp_path: Path) -> None:
    from advaudit.demo import shipped
    from advaudit.demo.findings import read_trained
    from advaudit.models import load_target

    record = shipped.record()
    assert sorted(record["checkpoints"]) == ["control", "roll_narrowed"] and record["seed"] == 0
    assert record["checkpoints"]["roll_narrowed"]["factors"] == {"camera_roll": [0, 240]}
    assert record["checkpoints"]["control"]["factors"] is None
    paths = shipped.install(tmp_path / "train", ["control", "roll_narrowed"])
    for path in paths:   # weights_only, as every target.pt; small enough to ship
        assert path.stat().st_size < 5_000_000 and load_target(path).num_classes == 10
    trained = read_trained(tmp_path / "train", {"camera_roll": (0.0, 360.0)})
    assert [(t.name, t.narrowed) for t in trained] == [("control", {}), ("roll_narrowed", {"camera_roll": (0.0, 240.0)})]
    assert [t.test_acc for t in trained] == [record["checkpoints"][n]["test_acc"] for n in ("control", "roll_narrowed")]
