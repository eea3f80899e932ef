"""The worst-case audit end to end on a tiny ShapeWorld target: results, resume, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.report.records import read_jsonl
from advaudit.tasks import examine
from tests.conftest import worst_case_overrides


def test_examination_writes_records_plots_and_monotone_scores(make_cfg, tiny_shapes_target: Path) -> None:
    cfg = make_cfg("examine", worst_case_overrides(tiny_shapes_target, "audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]"))
    result = examine(cfg)
    out = Path(cfg.paths.output_dir)
    records = read_jsonl(out / "steps.jsonl")
    assert len(records) == 10 * 3  # 10 instances (best per class) x 3 steps of q=4
    assert result["n_instances"] == 10 and result["queries_per_instance"] == 12
    assert result["examine/E@12"] <= result["examine/E@4"] <= result["examine/E@0"] + 1e-9
    assert 0 <= result["examine/true_prob"] <= 1
    for name in ("true_prob_vs_queries.png", "per_class.png", "worst_cases.png", "tsne.png", "report.md"):
        assert (out / name).exists(), name
    # the sun angles were fixed per instance: identical across that instance's queries
    by_instance = [r for r in records if r["instance"] == records[0]["instance"]]
    sun = {tuple(round(v, 5) for v in s[:3]) for r in by_instance for s in r["s"]}
    assert len(sun) == 1
    worst = result["worst_cases"][0]
    assert worst["true_prob"] == pytest.approx(min(p for r in records if r["instance"] == worst["instance"]
                                                   for p in r["true_prob"]))


def test_strength_mode_finds_higher_probabilities(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    weak = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target)))
    strong = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, "audit.mode=strength",
                                                              f"paths.output_dir={tmp_path / 'strength'}")))
    assert strong["examine/true_prob"] >= weak["examine/true_prob"]


def test_a_killed_examination_resumes_to_the_same_result(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    overrides = worst_case_overrides(tiny_shapes_target, "examiner=bo", "examiner.q=1", "examiner.adam_steps=2",
                                     "audit.budget=6", "audit.report_budgets=[0,3,6]")
    full = examine(make_cfg("examine", overrides))
    killed = make_cfg("examine", [*overrides, "audit.stop_after_steps=2", f"paths.output_dir={tmp_path / 'resumed'}"])
    with pytest.raises(KeyboardInterrupt):
        examine(killed)
    assert len(read_jsonl(tmp_path / "resumed" / "steps.jsonl")) == 10 * 2
    resumed = examine(make_cfg("examine", [*overrides, f"paths.output_dir={tmp_path / 'resumed'}"]))
    assert resumed["examine/E@6"] == pytest.approx(full["examine/E@6"], abs=1e-6)
    assert len(read_jsonl(tmp_path / "resumed" / "steps.jsonl")) == 10 * 6


@pytest.mark.parametrize("extra,message", [
    (["audit.budget=0"], "budget=0"),
    (["audit.selection=random", "audit.n_instances=500"], "only 20 instances"),
    (["audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z,sun_energy,light_energy,light_distance,light_azimuth,"
      "light_elevation,camera_distance,camera_azimuth,camera_elevation,camera_roll]"], "all factors are fixed"),
    (["world.image_size=32"], r"renders images of shape \[3, 32, 32\] but the target takes \[3, 16, 16\]"),
])
def test_bad_input_is_named(make_cfg, tiny_shapes_target: Path, extra: list[str], message: str) -> None:
    with pytest.raises(AdvauditError, match=message):
        examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, *extra)))


def test_a_model_that_returns_nan_is_named(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    payload = torch.load(tiny_shapes_target, weights_only=True)
    payload["state_dict"] = {k: torch.full_like(v, float("nan")) if v.is_floating_point() and k.startswith("net.")
                             else v for k, v in payload["state_dict"].items()}
    broken = tmp_path / "nan.pt"
    torch.save(payload, broken)
    with pytest.raises(AdvauditError, match="returned NaN"):
        examine(make_cfg("examine", worst_case_overrides(broken)))


def test_examine_multirun_over_examiners_and_the_leaderboard(tiny_shapes_target: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from advaudit.report.leaderboard import collect_results
    from tests.conftest import REPO

    overrides = [o for o in worst_case_overrides(tiny_shapes_target) if not o.startswith("examiner")]
    env = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "examine.py", "-m", "examiner=random,rl", "examiner.q=4", *overrides,
                           f"hydra.sweep.dir={tmp_path}"], cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    frame = collect_results([tmp_path])
    assert sorted(frame["method"]) == ["random", "rl"] and frame["examine/true_prob"].notna().all()
