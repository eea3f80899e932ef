"""Results on disk survive kills; W&B runs open offline without a network and are always closed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from advaudit.core.records import append_jsonl, read_json, read_jsonl, write_json
from advaudit.core.wandb_run import finish_any_wandb_run, wandb_settings
from advaudit.models.targets.tracking import open_wandb


def test_jsonl_appends_and_ignores_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "steps.jsonl"
    append_jsonl(path, {"step": 0, "loss": torch.tensor(0.5)})
    append_jsonl(path, [{"step": 1, "loss": float("nan")}, {"step": 2, "s": torch.ones(2)}])
    with open(path, "a") as handle:
        handle.write('{"step": 3, "lo')  # a kill mid-write
    records = read_jsonl(path)
    assert [r["step"] for r in records] == [0, 1, 2] and records[1]["loss"] is None and records[2]["s"] == [1.0, 1.0]
    assert read_jsonl(tmp_path / "absent.jsonl") == []
    write_json(tmp_path / "r.json", {"x": math.inf, "p": tmp_path})
    assert read_json(tmp_path / "r.json") == {"x": None, "p": str(tmp_path)}


def test_wandb_mode_comes_from_config_not_process_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    cfg = OmegaConf.create({"logger": {"wandb": {"mode": "disabled", "project": "p"}}})
    assert wandb_settings(cfg)["mode"] == "disabled"
    assert wandb_settings(OmegaConf.create({}))["mode"] == "offline"
    assert wandb_settings(OmegaConf.create({"logger": {}}))["mode"] == "disabled"  # logger=none


def test_offline_run_is_written_and_closed_even_on_error(tmp_path: Path) -> None:
    import wandb

    cfg = OmegaConf.create({"logger": {"wandb": {"mode": "offline", "project": "advaudit-test"}},
                            "paths": {"output_dir": str(tmp_path)}})
    with pytest.raises(RuntimeError, match="boom"):
        with open_wandb(cfg, job_type="test") as run:
            run.log({"examine/true_prob": 0.5})
            raise RuntimeError("boom")
    assert wandb.run is None
    assert list((tmp_path / "wandb").glob("offline-run-*"))
    wandb.init(mode="offline", dir=str(tmp_path), project="advaudit-test")
    finish_any_wandb_run()
    assert wandb.run is None


def _tiny_checkpoint(path: Path) -> Path:
    """A real (untrained) MLP target checkpoint written by advaudit's own save_target."""
    from advaudit.models import save_target
    from advaudit.models.nets import build_net
    from advaudit.models.targets.target import TorchTarget

    meta = {"arch": "mlp", "arch_params": {}, "class_names": ["a", "b", "c"], "input_shape": [4],
            "normalization": {"mean": [0.0] * 4, "std": [1.0] * 4}, "config": {"seed": 5}}
    return save_target(TorchTarget(build_net("advaudit.models.nets.MLP", [4], 3), meta), path,
                       extra={"metrics": {"test/acc": 0.5}})


def test_offline_run_carries_group_resolved_config_summary_and_checkpoint_lineage(tmp_path: Path) -> None:
    from advaudit.report.wandb_offline import offline_runs

    checkpoint = _tiny_checkpoint(tmp_path / "train" / "3" / "checkpoints" / "target.pt")
    cfg = OmegaConf.create({"logger": {"wandb": {"mode": "offline", "project": "advaudit-test",
                                                 "group": "${wandb_group:${task_name}}", "tags": ["${task_name}"]}},
                            "task_name": "examine", "seed": 3, "note": "seed is ${seed}", "target": str(checkpoint),
                            "audit": {"name": "worst_case"}, "examiner": {"name": "rl"},
                            "paths": {"output_dir": str(tmp_path / "run")}})
    with open_wandb(cfg, job_type="examine", name="worst_case-rl") as run:
        run.log({"examine/worst": 0.25, "examine/queries": 10})
        run.log_table("examine/rows", [{"a": 1, "b": [1, 2]}, {"a": 2}])
    [offline] = offline_runs(tmp_path / "run")
    assert offline["group"] == "examine" and offline["job_type"] == "worst_case"   # not a multirun: the task
    assert {"examine", "worst_case", "rl", "seed=3"} <= set(offline["tags"])
    assert offline["config"]["note"] == "seed is 3" and offline["config"]["target"] == str(checkpoint)
    assert offline["summary"]["examine/worst"] == 0.25
    [artifact] = [a for a in offline["artifacts"] if a["type"] == "model"]
    assert artifact["type"] == "model" and artifact["input"] is True and artifact["files"] == ["target.pt"]
    assert artifact["name"].startswith("target-3-target-")
    assert artifact["metadata"]["arch"] == "mlp" and artifact["metadata"]["class_names"] == ["a", "b", "c"]
    assert artifact["metadata"]["metrics"] == {"test/acc": 0.5} and artifact["metadata"]["seed"] == 5


def test_wandb_group_is_the_sweep_id_inside_a_multirun(tmp_path: Path) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from advaudit.core.wandb_run import run_group

    assert run_group("examine") == "examine"
    hydra_cfg = OmegaConf.create({"hydra": {"mode": RunMode.MULTIRUN, "sweep": {"dir": str(tmp_path / "2026-01-02_03-04-05")}}})
    HydraConfig.instance().cfg = hydra_cfg  # what Hydra sets in every job of a sweep
    try:
        assert run_group("examine") == "examine-2026-01-02_03-04-05"
        assert OmegaConf.create({"g": "${wandb_group:train}"}).g == "train-2026-01-02_03-04-05"
    finally:
        HydraConfig.instance().cfg = None


def test_a_sweeps_comparison_joins_the_group_its_jobs_were_given(tmp_path: Path) -> None:
    from advaudit.report.wandb_offline import offline_runs
    from advaudit.compare.render.wandb import log_comparison

    summary = {"runs": 2, "failed": [], "groups": []}
    default = {"logger": {"wandb": {"mode": "offline", "project": "advaudit-test", "group": "${wandb_group:${task_name}}"}},
               "task_name": "examine"}
    log_comparison(summary, tmp_path / "default", OmegaConf.create(default), sweep_id="2026-01-02_03-04-05")
    named = {**default, "logger": {"wandb": {**default["logger"]["wandb"], "group": "demo-2026"}}}
    log_comparison(summary, tmp_path / "named", OmegaConf.create(named), sweep_id="2026-01-02_03-04-05")
    [by_default] = offline_runs(tmp_path / "default")
    [by_name] = offline_runs(tmp_path / "named")
    assert by_default["group"] == "examine-2026-01-02_03-04-05" and by_default["job_type"] == "compare"
    assert by_name["group"] == "demo-2026"
