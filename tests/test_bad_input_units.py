"""The pieces behind the bad-input boundary, in process: classification, exit codes, run-dir claims,
non-finite outputs, unreadable images, and a multirun whose failed job does not end the sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra.errors import InstantiationException
from omegaconf import OmegaConf

from advaudit.cli import run_cli
from advaudit.core.run_records import RunDirConflict, claim_run_dir
from advaudit.errors import AdvauditError, check_finite, classify
from tests.conftest import REPO


def _raised_inside_instantiate(error: BaseException) -> InstantiationException:
    try:
        try:
            raise error
        except BaseException as inner:
            raise InstantiationException("Error in call to target 'x.World':\nwrapped") from inner
    except InstantiationException as outer:
        return outer


def test_classify_separates_user_errors_from_bugs() -> None:
    assert classify(_raised_inside_instantiate(AdvauditError("factor 'a' has low=2 > high=1"))) == (
        "user", "factor 'a' has low=2 > high=1")
    assert classify(_raised_inside_instantiate(TypeError("unexpected keyword 'colour'")))[0] == "user"
    assert classify(_raised_inside_instantiate(IndexError("list index out of range")))[0] == "bug"
    assert classify(RuntimeError("shape mismatch"))[0] == "bug"
    cfg = OmegaConf.structured({"budget": 3})
    OmegaConf.set_struct(cfg, True)
    try:
        cfg.bugdet  # noqa: B018
    except Exception as error:  # an OmegaConf error names the key
        kind, message = classify(error)
    assert kind == "user" and "bugdet" in message
    kind, message = classify(FileNotFoundError(2, "No such file or directory", "/data/x.csv"))
    assert kind == "user" and "/data/x.csv" in message


@pytest.fixture
def restore_signals():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def test_run_cli_exit_codes(capsys, restore_signals) -> None:
    def user_error() -> None:
        raise AdvauditError("audit.budget=0 must be >= 1")

    def bug() -> None:
        raise RuntimeError("an internal invariant broke")

    with pytest.raises(SystemExit) as stop:
        run_cli(user_error)
    assert stop.value.code == 2 and capsys.readouterr().err == "error: audit.budget=0 must be >= 1\n"
    with pytest.raises(RuntimeError, match="internal invariant"):  # a bug keeps its traceback (exit 1)
        run_cli(bug)
    assert "HYDRA_FULL_ERROR" not in os.environ or os.environ["HYDRA_FULL_ERROR"] != "1"


def test_a_run_dir_is_claimed_by_one_config(tmp_path: Path) -> None:
    cfg = OmegaConf.create({"seed": 1, "audit": {"budget": 8, "stop_after_steps": None}, "threads": 1})
    claim_run_dir(tmp_path, cfg)
    claim_run_dir(tmp_path, OmegaConf.merge(cfg, {"threads": 2, "audit": {"stop_after_steps": 3}}))  # same run
    with pytest.raises(RunDirConflict, match=r"changed: audit.budget: 8 -> 16"):
        claim_run_dir(tmp_path, OmegaConf.merge(cfg, {"audit": {"budget": 16}}))


def test_non_finite_outputs_name_the_instance_and_condition() -> None:
    probs = torch.full((6, 3), 1 / 3)
    check_finite(probs, "target")  # finite: nothing happens
    probs[4, 1] = float("nan")  # instance 2 (ids 10, 11, 12), its first of two candidates
    s = torch.arange(12.0).view(3, 2, 2)
    with pytest.raises(AdvauditError, match=r"1 of 6 .*step 7, instance 12, condition \{elevation: 8, roll: 9\}"):
        check_finite(probs, {"step": 7, "instance": torch.tensor([10, 11, 12]), "condition": s,
                             "factors": ["elevation", "roll"]})


def _image_folder(root: Path) -> Path:
    from PIL import Image

    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        for i in range(4):
            Image.new("RGB", (10, 10), (40 * i, 0, 0)).save(root / name / f"{i}.png")
    (root / "dog" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    return root


def test_unreadable_images_are_skipped_with_a_count_or_refused(tmp_path: Path, caplog) -> None:
    from advaudit.data.folders import ImageFolderDataModule

    root = _image_folder(tmp_path / "images")
    with caplog.at_level("WARNING", logger="advaudit"):
        dm = ImageFolderDataModule(str(root), image_size=8, test_fraction=0.25, val_fraction=0.0)
        dm.setup()
    assert sum(len(s) for s in dm.splits.values()) == 8
    assert "skipped 1 of 9 image file(s)" in caplog.text and "broken.png" in caplog.text
    with pytest.raises(AdvauditError, match=r"broken.png cannot be read.*dataset.strict=false"):
        ImageFolderDataModule(str(root), image_size=8, strict=True).setup()


def test_a_failed_job_of_a_multirun_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    env = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "examine.py", "-m", "audit=gallery", "world.image_size=16", "audit.n_instances=1",
           "audit.steps=1,3", "world.instances_per_class={train:1,val:1,test:1}", "logger=none", "threads=1",
           f"hydra.sweep.dir={tmp_path}"]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    failed = json.loads((tmp_path / "0" / "result.json").read_text())
    assert failed["status"] == "failed" and failed["error_kind"] == "user" and "audit.steps=1" in failed["error"]
    assert failed["task"] == "examine" and failed["config"]["audit"]["steps"] == 1
    assert json.loads((tmp_path / "1" / "result.json").read_text())["status"] == "ok"  # the second job ran
