"""train(cfg) end to end on real data through the composed Hydra config, and a real multirun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.tasks import train
from tests.conftest import REPO, TINY_FMNIST


def test_train_cnn_writes_result_and_loadable_checkpoint(make_cfg) -> None:
    cfg = make_cfg("train", ["model=cnn", *TINY_FMNIST, "dataset.limit.train=1500"])
    result = train(cfg)
    saved = json.loads((Path(cfg.paths.output_dir) / "result.json").read_text())
    assert saved["checkpoint"] == result["checkpoint"] and saved["config"]["model"]["name"] == "cnn"
    assert result["test/acc"] > 0.5  # 10 classes, chance is 0.1
    assert result["temperature"] > 0 and 0 <= result["val/ece_after"] <= 1
    assert load_target(result["checkpoint"]).class_names[-1] == "ankle-boot"


def test_adversarial_training_attacks_every_training_batch(make_cfg, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import advaudit.models.training.classifier as classifier

    attacked: list[tuple[torch.Tensor, torch.Tensor, dict]] = []

    def spy(model: object, x: torch.Tensor, y: torch.Tensor, **settings: object) -> torch.Tensor:
        adversarial = pgd_attack(model, x, y, **settings)
        attacked.append((x, adversarial, settings))
        return adversarial

    pgd_attack = classifier.pgd_attack
    monkeypatch.setattr(classifier, "pgd_attack", spy)
    cfg = make_cfg("train", ["model=mlp", *TINY_FMNIST, "+model.adversarial={norm:linf,eps:0.05,steps:2}"])
    assert train(cfg)["test/acc"] > 0.3
    assert len(attacked) == 5  # one epoch of 600 images in batches of 128: every training batch, only those
    assert sum(len(x) for x, _, _ in attacked) == 600
    for x, adversarial, settings in attacked:
        assert settings == {"norm": "linf", "eps": 0.05, "steps": 2}
        moved = (adversarial - x).abs().flatten(1).amax(1)
        assert bool((moved <= 0.05 + 1e-6).all()) and bool((moved > 0.04).all())


@pytest.mark.filterwarnings("ignore:You are trying to `self.log")  # a training step called outside a Trainer
def test_training_step_loss_is_the_loss_on_the_pgd_adversarial() -> None:
    import torch

    from advaudit.models.training.classifier import ClassifierModule, pgd_attack
    from advaudit.models.nets import build_net
    from advaudit.models.targets.target import TorchTarget

    torch.manual_seed(0)
    meta = {"arch": "mlp", "arch_params": {}, "class_names": ["a", "b", "c"], "input_shape": [1, 4, 4],
            "normalization": {"mean": [0.5], "std": [0.25]}}
    target = TorchTarget(build_net("advaudit.models.nets.MLP", [1, 4, 4], 3), meta)
    settings = {"norm": "linf", "eps": 0.1, "steps": 3}
    module = ClassifierModule(target, torch.optim.SGD, adversarial=settings)
    x, y = torch.rand(16, 1, 4, 4), torch.arange(16) % 3
    torch.manual_seed(1)
    loss = module.training_step((x, y), 0)
    torch.manual_seed(1)  # the same random start
    expected = torch.nn.functional.cross_entropy(target.logits(pgd_attack(target, x, y, **settings)), y)
    clean = torch.nn.functional.cross_entropy(target.logits(x), y)
    assert float(loss) == pytest.approx(float(expected), rel=1e-6) and float(loss) > float(clean) + 0.01


def test_svm_black_box_on_a_real_table(make_cfg) -> None:
    cfg = make_cfg("train", ["model=svm", "dataset=tabular", "dataset.name=wine", "logger=none"])
    result = train(cfg)
    assert result["test/acc"] > 0.85 and "kernel" in result["best_params"]
    assert load_target(result["checkpoint"]).predict_proba(
        __import__("torch").zeros(1, 13)).shape == (1, 3)
    with pytest.raises(AdvauditError, match="use dataset=tabular"):
        train(make_cfg("train", ["model=svm", "dataset=digits", "logger=none"]))


def test_bias_errors_reach_the_user(make_cfg) -> None:
    with pytest.raises(AdvauditError, match="larger than the"):
        train(make_cfg("train", [*TINY_FMNIST, "+dataset.bias.max_per_group={m:100000,group:class}"]))


def test_train_py_unknown_model_and_user_errors_are_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "WANDB_MODE": "disabled"}
    unknown = subprocess.run([sys.executable, "train.py", "model=transformer", f"hydra.run.dir={tmp_path}/a"],
                             cwd=REPO, capture_output=True, text=True, env=env)
    assert unknown.returncode != 0 and "Could not find 'model/transformer'" in unknown.stderr
    missing = subprocess.run([sys.executable, "train.py", "dataset.root=/nonexistent", f"hydra.run.dir={tmp_path}/b"],
                             cwd=REPO, capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "error: Fashion-MNIST not found at /nonexistent" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.slow  # about a minute on 2 cores: make test stays under 15 minutes; run with -m slow
def test_multirun_2x2_writes_four_results(tmp_path: Path) -> None:
    env = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0"}
    cmd = [sys.executable, "train.py", "-m", "model=cnn,mlp", "seed=1,2", "debug=fast",
           "dataset.limit={train:300,val:100,test:100}", "callbacks=none",
           f"hydra.sweep.dir={tmp_path}", "+trainer.enable_progress_bar=false"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = sorted(tmp_path.rglob("result.json"))
    assert len(results) == 4
    combos = {(json.loads(p.read_text())["config"]["model"]["name"], json.loads(p.read_text())["config"]["seed"])
              for p in results}
    assert combos == {("cnn", 1), ("cnn", 2), ("mlp", 1), ("mlp", 2)}


def test_a_training_run_is_tracked_in_wandb_like_an_audit(make_cfg, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline W&B record of a training job in a sweep: the sweep's group, the resolved config
    (what makes this checkpoint differ), the tags, the final metrics and the checkpoint as output."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from advaudit.report.wandb_offline import offline_runs
    from tests.conftest import TINY_SHAPES

    monkeypatch.setenv("WANDB_MODE", "offline")
    overrides = [o for o in TINY_SHAPES if not o.startswith("logger=")]
    cfg = make_cfg("train", ["model=cnn", *overrides, "seed=7", "tags=[demo,train]",
                             "dataset.factors={camera_roll:[0,300]}"])
    HydraConfig.instance().cfg = OmegaConf.create(  # what Hydra sets in every job of a sweep
        {"hydra": {"mode": RunMode.MULTIRUN, "sweep": {"dir": str(tmp_path / "2026-01-02_03-04-05")}}})
    try:
        result = train(cfg)
    finally:
        HydraConfig.instance().cfg = None
    [run] = offline_runs(tmp_path / "run")
    assert run["finished"] and run["group"] == "train-2026-01-02_03-04-05" and run["job_type"] == "train"
    assert run["config"]["dataset"]["factors"] == {"camera_roll": [0, 300]}
    assert run["config"]["model"]["name"] == "cnn" and run["config"]["seed"] == 7
    assert run["config"]["paths"]["output_dir"] == str(tmp_path / "run")   # resolved, not ${...}
    assert {"demo", "train", "cnn", "seed=7"} <= set(run["tags"])
    assert run["summary"]["test/acc"] == pytest.approx(result["test/acc"])
    assert run["summary"]["val/ece_after"] == pytest.approx(result["val/ece_after"])
    [artifact] = [a for a in run["artifacts"] if a["type"] == "model"]
    assert artifact["input"] is False and artifact["files"] == ["target.pt"]
    assert artifact["metadata"]["final_metrics"]["test/acc"] == pytest.approx(result["test/acc"])
