"""Results on disk survive kills; W&B runs open offline without a network and are always closed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from advaudit.report.records import append_jsonl, read_json, read_jsonl, write_json
from advaudit.report.wandb_run import finish_any_wandb_run, open_wandb, wandb_settings


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
