"""Training and every audit claim their run dir one way (:func:`advaudit.core.run_records.claim_dir`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from advaudit.audits.lifecycle import FINGERPRINT_FILE, RunDir, fingerprint
from advaudit.core.run_records import RUN_CONFIG, RunDirConflict, claim_run_dir, fingerprint_of


def test_an_audit_and_a_training_run_claim_their_dir_by_one_scheme(tmp_path: Path) -> None:
    audit = OmegaConf.create({"target": "a.pt", "seed": 0, "audit": {"budget": 8, "chunk": 4}, "world": {"image_size": 16}})
    run = RunDir(tmp_path / "audit", audit, ["world"])
    assert run.key == fingerprint(audit, ["world"])  # the key the audits' records already carry
    again = RunDir(tmp_path / "audit", OmegaConf.merge(audit, {"audit": {"chunk": 2}}), ["world"])  # bookkeeping only
    assert again.key == run.key
    with pytest.raises(RunDirConflict, match=r"holds a different examination \(changed: world.image_size: 16 -> 32\)"):
        RunDir(tmp_path / "audit", OmegaConf.merge(audit, {"world": {"image_size": 32}}), ["world"])

    train = OmegaConf.create({"seed": 0, "model": {"lr": 0.1}, "threads": 1})
    claim_run_dir(tmp_path / "train", train)
    claim_run_dir(tmp_path / "train", OmegaConf.merge(train, {"threads": 2}))  # not a key that changes results
    with pytest.raises(RunDirConflict, match=r"holds results of a different config \(changed: model.lr: 0.1 -> 0.2\)"):
        claim_run_dir(tmp_path / "train", OmegaConf.merge(train, {"model": {"lr": 0.2}}))
    for record in (tmp_path / "audit" / FINGERPRINT_FILE, tmp_path / "train" / RUN_CONFIG):
        held = json.loads(record.read_text())
        assert sorted(held) == ["design", "fingerprint"] and held["fingerprint"] == fingerprint_of(held["design"])


def test_a_dir_claimed_before_the_shared_scheme_still_resumes(tmp_path: Path) -> None:
    """An audit dir that holds only its fingerprint, a training dir that holds only its design."""
    audit = OmegaConf.create({"target": "a.pt", "seed": 0, "audit": {"budget": 8}})
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": fingerprint(audit, [])}))
    assert RunDir(tmp_path / "audit", audit, []).key == fingerprint(audit, [])
    with pytest.raises(RunDirConflict, match="holds a different examination; refusing"):
        (tmp_path / "audit" / FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": "0" * 16}))
        RunDir(tmp_path / "audit", audit, [])
    train = OmegaConf.create({"seed": 0, "model": {"lr": 0.1}})
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / RUN_CONFIG).write_text(json.dumps({"seed": 0, "model": {"lr": 0.1}}))
    claim_run_dir(tmp_path / "train", train)
    with pytest.raises(RunDirConflict, match=r"changed: model.lr: 0.1 -> 0.3"):
        claim_run_dir(tmp_path / "train", OmegaConf.merge(train, {"model": {"lr": 0.3}}))


def test_an_examination_made_before_a_setting_existed_resumes_at_its_neutral_value(tmp_path: Path) -> None:
    """BO examinations made before ``examiner.fit`` existed computed the joint fit: they resume with
    ``examiner.fit=joint`` (the default) and are refused with ``per_instance``."""
    before = OmegaConf.create({"target": "a.pt", "seed": 0, "audit": {"budget": 8}, "examiner": {"beta": 2.0}})
    run = RunDir(tmp_path / "bo", before, ["examiner"])
    now = OmegaConf.merge(before, {"examiner": {"fit": "joint"}})
    assert RunDir(tmp_path / "bo", now, ["examiner"]).key == run.key
    with pytest.raises(RunDirConflict, match=r"changed: examiner.fit: .*per_instance"):
        RunDir(tmp_path / "bo", OmegaConf.merge(before, {"examiner": {"fit": "per_instance"}}), ["examiner"])
