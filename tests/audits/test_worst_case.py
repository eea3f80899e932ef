"""The worst-case audit end to end on a tiny ShapeWorld target: results, resume, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from advaudit.core.records import read_jsonl
from advaudit.errors import AdvauditError
from advaudit.tasks import examine
from tests.conftest import worst_case_overrides


def _by_instance(records: list[dict], key: str) -> dict[int, list]:
    """``{instance: [values of key in query order]}`` from steps.jsonl records."""
    out: dict[int, list] = {}
    for r in sorted(records, key=lambda r: r["step"]):
        out.setdefault(r["instance"], []).extend(r[key])
    return out


def test_examination_reports_the_papers_metric_and_the_worst_valid_case(make_cfg, tiny_shapes_target: Path) -> None:
    cfg = make_cfg("examine", worst_case_overrides(tiny_shapes_target, "audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]"))
    result = examine(cfg)
    out = Path(cfg.paths.output_dir)
    records = read_jsonl(out / "steps.jsonl")
    assert len(records) == 10 * 3  # 10 instances (best per class) x 3 iterations of q=4
    assert result["n_instances"] == 10 and result["queries_per_instance"] == 12 and result["q"] == 4
    probs, valid = _by_instance(records, "true_prob"), _by_instance(records, "valid")
    # E_T (Algorithm 1): mean over instances of the mean over the proposals of the iteration containing query b
    for b, window in ((0, slice(0, 4)), (4, slice(0, 4)), (12, slice(8, 12))):
        expected = sum(sum(p[window]) / 4 for p in probs.values()) / 10
        assert result[f"examine/E_T@{b}"] == pytest.approx(expected, abs=1e-6)
        assert result[f"examine/E_T@{b}/lo"] <= result[f"examine/E_T@{b}"] <= result[f"examine/E_T@{b}/hi"]
    # worst: running minimum over valid proposals only
    worst = [min(p for p, ok in zip(probs[i], valid[i]) if ok) for i in probs if any(valid[i])]
    assert result["examine/worst"] == pytest.approx(sum(worst) / len(worst), abs=1e-6)
    assert result["examine/E_T"] == result["examine/E_T@12"]
    assert result["budgets"] == [{"queries": 0, "iterations": 0}, {"queries": 4, "iterations": 1},
                                 {"queries": 12, "iterations": 3}]
    for name in ("true_prob_vs_queries.png", "per_class.png", "worst_cases.png", "tsne.png", "report.md"):
        assert (out / name).exists(), name
    assert "E_T" in (out / "report.md").read_text()
    # the sun angles were fixed per instance: identical across that instance's queries
    by_instance = [r for r in records if r["instance"] == records[0]["instance"]]
    sun = {tuple(round(v, 5) for v in s[:3]) for r in by_instance for s in r["s"]}
    assert len(sun) == 1
    first = result["per_instance"][0]
    own = [(p, ok) for p, ok in zip(probs[first["instance"]], valid[first["instance"]])]
    assert first["worst"] == pytest.approx(min(p for p, ok in own if ok))
    assert set(first["worst_s"]) == {"sun_rot_x", "sun_rot_y", "sun_rot_z", "sun_energy", "light_energy",
                                     "light_distance", "light_azimuth", "light_elevation", "camera_distance",
                                     "camera_azimuth", "camera_elevation", "camera_roll"}


def test_strength_mode_reports_the_highest_valid_probability(make_cfg, tiny_shapes_target: Path) -> None:
    cfg = make_cfg("examine", worst_case_overrides(tiny_shapes_target, "audit.mode=strength"))
    result = examine(cfg)
    records = read_jsonl(Path(cfg.paths.output_dir) / "steps.jsonl")
    probs, valid = _by_instance(records, "true_prob"), _by_instance(records, "valid")
    best = [max(p for p, ok in zip(probs[i], valid[i]) if ok) for i in probs if any(valid[i])]
    assert result["examine/worst"] == pytest.approx(sum(best) / len(best), abs=1e-6)


def test_budgets_are_honoured_to_the_query_and_in_iterations(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    partial = examine(make_cfg("examine", worst_case_overrides(
        tiny_shapes_target, "audit.budget=10", "audit.report_budgets=[0,4,10]")))
    assert partial["queries_per_instance"] == 10
    records = read_jsonl(tmp_path / "run" / "steps.jsonl")
    assert sorted({len(r["true_prob"]) for r in records if r["step"] == 2}) == [2]  # a partial last iteration
    last = [r for r in records if r["step"] == 2]
    assert partial["examine/E_T@10"] == pytest.approx(sum(sum(r["true_prob"]) / 2 for r in last) / len(last), abs=1e-6)
    iterations = examine(make_cfg("examine", worst_case_overrides(
        tiny_shapes_target, "audit.budget_unit=iterations", "audit.budget=2", "audit.report_budgets=[0,1,2]",
        f"paths.output_dir={tmp_path / 'iterations'}")))
    assert iterations["queries_per_instance"] == 8 and iterations["budget_unit"] == "iterations"
    assert [b["iterations"] for b in iterations["budgets"]] == [0, 1, 2] and "examine/E_T@8" in iterations


def test_failures_count_only_on_label_preserving_conditions(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    # camera distance 1: the object overflows the frame in nearly every view (the in-frame check alone)
    close = examine(make_cfg("examine", worst_case_overrides(
        tiny_shapes_target, "world.factors={camera_distance:1.0}", "audit.validity.min_extent=0",
        "audit.validity.reference=null")))
    far = examine(make_cfg("examine", worst_case_overrides(
        tiny_shapes_target, "world.factors={camera_distance:2.5}", "audit.validity.min_extent=0",
        "audit.validity.reference=null", f"paths.output_dir={tmp_path / 'far'}")))
    assert close["examine/invalid_share"] > 0.8 and far["examine/invalid_share"] == 0.0
    records = read_jsonl(tmp_path / "run" / "steps.jsonl")
    misclassified_valid = sum(p != r["label"] and ok for r in records for p, ok in zip(r["predicted"], r["valid"]))
    failed_instances = {r["instance"] for r in records for p, ok in zip(r["predicted"], r["valid"]) if ok and p != r["label"]}
    assert close["examine/failure_rate"] == pytest.approx(len(failed_instances) / 10)
    assert misclassified_valid < sum(p != r["label"] for r in records for p in r["predicted"])  # invalid ones not counted
    assert close["validity"]["in_frame"] == pytest.approx(close["examine/invalid_share"])


def test_a_reference_judge_that_is_the_target_leaves_no_valid_failure(make_cfg, tiny_shapes_target: Path) -> None:
    # valid = the reference's answer is right; with the target as its own reference no valid proposal can be wrong
    result = examine(make_cfg("examine", worst_case_overrides(
        tiny_shapes_target, f"audit.validity.reference={tiny_shapes_target}", "audit.validity.reference_min_prob=0.0")))
    assert result["validity_checks"][-1] == "reference" and result["examine/failure_rate"] == 0.0
    assert 0.0 < result["examine/invalid_share"] < 1.0


def test_a_killed_examination_resumes_to_the_same_result(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    overrides = worst_case_overrides(tiny_shapes_target, "examiner=bo", "examiner.q=1", "examiner.adam_steps=2",
                                     "audit.budget=6", "audit.report_budgets=[0,3,6]")
    full = examine(make_cfg("examine", overrides))
    killed = make_cfg("examine", [*overrides, "audit.stop_after_steps=2", f"paths.output_dir={tmp_path / 'resumed'}"])
    with pytest.raises(KeyboardInterrupt):
        examine(killed)
    assert len(read_jsonl(tmp_path / "resumed" / "steps.jsonl")) == 10 * 2
    resumed = examine(make_cfg("examine", [*overrides, f"paths.output_dir={tmp_path / 'resumed'}"]))
    for key in ("examine/E_T@6", "examine/worst@6", "examine/E_T@3/lo"):
        assert resumed[key] == pytest.approx(full[key], abs=1e-6)
    assert len(read_jsonl(tmp_path / "resumed" / "steps.jsonl")) == 10 * 6


class _StoppedClock:
    """A stand-in for ``time.perf_counter``: ``start`` on the first call, ``start + span`` on every later one,
    so an examination measures exactly ``span`` seconds however often it reads the clock."""

    def __init__(self, start: float, span: float) -> None:
        self.readings = iter([start])
        self.end = start + span

    def __call__(self) -> float:
        return next(self.readings, self.end)


def test_a_finished_examination_extends_to_a_larger_budget_as_if_run_at_it(make_cfg, tiny_shapes_target: Path,
                                                                          tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import advaudit.audits.worst_case as worst_case

    overrides = worst_case_overrides(tiny_shapes_target, "examiner=rl", "examiner.q=4", "examiner.lr=0.05")
    longer = [*overrides, "audit.budget=16", "audit.report_budgets=[0,8,16]"]
    full = examine(make_cfg("examine", [*longer, f"paths.output_dir={tmp_path / 'full'}"]))
    monkeypatch.setattr(worst_case, "time", SimpleNamespace(perf_counter=_StoppedClock(0.0, 60.25)))
    short = examine(make_cfg("examine", [*overrides, "audit.budget=8", "audit.report_budgets=[0,8]",
                                          f"paths.output_dir={tmp_path / 'extended'}"]))
    assert "examine/E_T@16" not in short
    monkeypatch.setattr(worst_case, "time", SimpleNamespace(perf_counter=_StoppedClock(5000.0, 45.5)))
    extended = examine(make_cfg("examine", [*longer, f"paths.output_dir={tmp_path / 'extended'}"]))
    monkeypatch.undo()
    queried = [_by_instance(read_jsonl(tmp_path / d / "steps.jsonl"), "s") for d in ("full", "extended")]
    assert queried[0] == queried[1]  # the policy after 2 updates, resumed, proposes what it did uninterrupted
    # the examination's seconds add up over both invocations: 60.25 s for the first 8 queries, 45.5 s for the rest
    assert (short["seconds_examination"], extended["seconds_examination"]) == (60.25, 105.75)
    for key in ("examine/E_T@8", "examine/E_T@16", "examine/worst@16", "examine/E_T@16/hi"):
        assert extended[key] == pytest.approx(full[key], abs=1e-6)
    with pytest.raises(AdvauditError, match="already holds 16 queries per instance"):
        examine(make_cfg("examine", [*overrides, f"paths.output_dir={tmp_path / 'extended'}"]))
    partial = [*overrides, "audit.budget=6", "audit.report_budgets=[0,6]", f"paths.output_dir={tmp_path / 'partial'}"]
    examine(make_cfg("examine", partial))
    with pytest.raises(AdvauditError, match="partial iteration"):
        examine(make_cfg("examine", [*partial, "audit.budget=12"]))


@pytest.mark.parametrize("extra,message", [
    (["audit.budget=0"], "budget=0"),
    (["audit.report_budgets=[0,100]"], r"has \[100\] outside \[0, audit.budget=12\]"),
    (["+audit.validity.min_px=3"], r"unknown keys \['min_px'\]"),
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
    # random selection: the first forward pass is the examination's, which names where it happened
    with pytest.raises(AdvauditError, match=r"step 0, instance \d+, condition \{sun_rot_x: "):
        examine(make_cfg("examine", worst_case_overrides(broken, "audit.selection=random", "audit.n_instances=3",
                                                         f"paths.output_dir={tmp_path / 'random'}")))


@pytest.mark.slow  # about a minute on 2 cores: make test stays under 15 minutes; run with -m slow
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
    assert sorted(frame["method"]) == ["random", "rl"] and frame["examine/E_T"].notna().all()
