"""The evaluate audit through examine(cfg) on a trained target, plus the leaderboard over its results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advaudit.audits.common import target_datamodule
from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.report.leaderboard import collect_results, main as leaderboard_main, rank
from advaudit.tasks import examine


def test_evaluate_audit_writes_metrics_and_plots(make_cfg, tiny_fmnist_target: Path) -> None:
    cfg = make_cfg("examine", ["audit=evaluate", f"target={tiny_fmnist_target}", "logger=none",
                               "+audit.dataset={_target_:advaudit.data.fashion_mnist.FashionMNISTDataModule,"
                               "limit:{train:100,test:500}}"])
    result = examine(cfg)
    out = Path(cfg.paths.output_dir)
    assert (out / "reliability.png").stat().st_size > 1000 and (out / "confusion.png").exists()
    saved = json.loads((out / "result.json").read_text())
    assert saved["n_items"] == 500 and saved["audit"] == "evaluate"
    # the same 500 items scored here, outside the audit: accuracy, per-class accuracy and the worst class agree
    target = load_target(tiny_fmnist_target)
    split = target_datamodule(target, cfg.audit.dataset).split("test")
    predicted = target.predict_proba(split.x).argmax(1)
    per_class = [float((predicted[split.y == c] == c).float().mean()) for c in range(10)]
    assert len(split) == 500 and result["evaluate/acc"] == pytest.approx(float((predicted == split.y).float().mean()))
    assert list(saved["per_class_acc"].values()) == pytest.approx(per_class)
    assert list(saved["per_class_acc"]) == target.class_names
    assert result["evaluate/worst_class_acc"] == pytest.approx(min(per_class))
    assert min(per_class) < result["evaluate/acc"] < max(per_class)  # classes differ: the worst is not the mean


def test_evaluate_needs_a_target(make_cfg) -> None:
    with pytest.raises(AdvauditError, match="no target given"):
        examine(make_cfg("examine", ["audit=evaluate", "logger=none"]))


def test_leaderboard_ranks_runs(tmp_path: Path) -> None:
    for i, acc in enumerate([0.7, 0.9, 0.8]):
        run = tmp_path / str(i)
        run.mkdir()
        (run / "result.json").write_text(json.dumps({
            "audit": "evaluate", "target": f"/m{i}/checkpoints/target.pt", "evaluate/acc": acc,
            "config": {"seed": i, "model": {"arch": "cnn"}}}))
    frame = rank(collect_results([tmp_path]), "evaluate/acc")
    assert frame["evaluate/acc"].tolist() == [0.9, 0.8, 0.7] and frame["target"][0] == "/m1/checkpoints/target.pt"
    leaderboard_main([str(tmp_path), "--metric", "evaluate/acc", "--ascending"])
    assert (tmp_path / "leaderboard.png").exists()
    assert (tmp_path / "leaderboard.csv").read_text().splitlines()[1].startswith("/m0/")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdvauditError, match="no result.json"):
        collect_results([tmp_path / "empty"])
