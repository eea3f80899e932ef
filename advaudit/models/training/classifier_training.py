"""Train a torch target with Lightning, calibrate it, test it and save a self-describing checkpoint."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.loggers import WandbLogger
from torch.utils.data import DataLoader

from advaudit.confutil import plain
from advaudit.errors import AdvauditError, check_finite
from advaudit.models.targets.calibration import expected_calibration_error, fit_temperature
from advaudit.models.training.classifier import ClassifierModule, collect_logits
from advaudit.models.training.datamodule import TrainingData
from advaudit.models.targets.io import save_target
from advaudit.models.nets import build_net, split_arch
from advaudit.models.targets.target import TorchTarget
from advaudit.models.targets.tracking import finish_training_run, track_training_run

log = logging.getLogger(__name__)


class LightningData(pl.LightningDataModule):
    """``data`` as Lightning's datamodule: advaudit's datasets are plain classes with the same loaders, so that
    what only reads data (an audit, each shard of one) does not import Lightning."""

    def __init__(self, data: TrainingData) -> None:
        super().__init__()
        self.data = data

    def setup(self, stage: str | None = None) -> None:
        self.data.setup(stage)

    def train_dataloader(self) -> DataLoader:
        return self.data.train_dataloader()

    def val_dataloader(self) -> DataLoader:
        return self.data.val_dataloader()

    def test_dataloader(self) -> DataLoader:
        return self.data.test_dataloader()


def build_target(cfg: DictConfig, datamodule: TrainingData) -> TorchTarget:
    """A fresh target for ``cfg.model`` sized to ``datamodule``'s inputs and classes."""
    arch, arch_params = split_arch(cfg.model.arch)
    net = build_net(arch, datamodule.input_shape, datamodule.num_classes, **arch_params)
    meta = {
        "arch": arch,
        "arch_params": arch_params,
        "class_names": datamodule.class_names,
        "input_shape": list(datamodule.input_shape),
        "normalization": datamodule.normalization(),
        "kind": datamodule.kind,
        "dataset": datamodule.describe(),
        "config": OmegaConf.to_container(cfg, resolve=True),
    }
    return TorchTarget(net, meta)


def instantiate_loggers(cfg: DictConfig) -> list[Any]:
    """Lightning loggers from ``cfg.logger`` (a dict of logger configs; empty -> none)."""
    group = cfg.get("logger") or {}
    loggers = []
    for name, logger_cfg in group.items():
        if logger_cfg is not None and "_target_" in logger_cfg:
            loggers.append(instantiate(logger_cfg))
    return loggers


def wandb_experiments(loggers: list[Any], cfg: DictConfig) -> list[Any]:
    """The W&B runs behind ``loggers`` (Lightning's ``WandbLogger``), each given the resolved config
    and the run tags before training starts (:func:`advaudit.models.targets.tracking.track_training_run`)."""
    runs = [logger.experiment for logger in loggers if isinstance(logger, WandbLogger)]
    for run in runs:
        track_training_run(run, cfg)
    return runs


def instantiate_callbacks(cfg: DictConfig) -> list[pl.Callback]:
    group = cfg.get("callbacks") or {}
    return [instantiate(c) for c in group.values() if c is not None and "_target_" in c]


class EpochCheckpoint(pl.Callback):
    """Save the whole training state to ``path`` (atomically) at the end of every epoch, so a run
    stopped by SIGINT/SIGTERM or a crash resumes from its last finished epoch when rerun."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        trainer.save_checkpoint(tmp)
        tmp.replace(self.path)


def resume_checkpoint(out: Path) -> Path:
    """Where :class:`EpochCheckpoint` keeps the training state of the run in ``out``."""
    return Path(out) / "checkpoints" / "resume.ckpt"


def train_classifier(cfg: DictConfig) -> dict[str, Any]:
    """Fit ``cfg.model`` on ``cfg.dataset``; fit the temperature on validation logits; save.

    The training state is saved after every epoch (``checkpoints/resume.ckpt``); rerun into the
    same run dir (the task wrapper has checked it holds the same config), training resumes from it.

    Returns the metrics dict (``val/acc``, ``test/acc``, ``val/ece_before``, ``val/ece_after``,
    ``temperature``, ``checkpoint``, ``resumed_from_epoch``).
    """
    datamodule: TrainingData = instantiate(cfg.dataset)
    datamodule.setup()
    target = build_target(cfg, datamodule)
    module = ClassifierModule(target, optimizer=instantiate(cfg.model.optimizer),
                              adversarial=plain(cfg.model.get("adversarial")),
                              max_epochs=int(cfg.trainer.max_epochs))
    loggers = instantiate_loggers(cfg)
    wandb_runs = wandb_experiments(loggers, cfg)
    resume = resume_checkpoint(Path(cfg.paths.output_dir))
    trainer: pl.Trainer = instantiate(cfg.trainer, logger=loggers or False,
                                      callbacks=[*instantiate_callbacks(cfg), EpochCheckpoint(resume)])
    resumed_from = saved_epochs(resume)
    if resumed_from is not None:
        log.info("resuming training from %s (%d epoch(s) done)", resume, resumed_from)
    trainer.fit(module, datamodule=LightningData(datamodule), ckpt_path=resume if resumed_from is not None else None,
                weights_only=True)

    target = module.target.cpu().eval()
    val_logits, val_y = collect_logits(target, datamodule.val_dataloader())
    check_finite(val_logits, "the trained model on the validation split: training diverged; lower "
                 f"model.optimizer.lr (now {cfg.model.optimizer.get('lr')})")
    ece_before = expected_calibration_error(val_logits.softmax(1), val_y)
    temperature = fit_temperature(val_logits, val_y)
    target.temperature.fill_(temperature)
    ece_after = expected_calibration_error((val_logits / temperature).softmax(1), val_y)
    test_logits, test_y = collect_logits(target, datamodule.test_dataloader())
    metrics = {
        "val/acc": float((val_logits.argmax(1) == val_y).float().mean()),
        "test/acc": float((test_logits.argmax(1) == test_y).float().mean()),
        "val/ece_before": ece_before,
        "val/ece_after": ece_after,
        "test/ece": expected_calibration_error((test_logits / temperature).softmax(1), test_y),
        "temperature": temperature,
        "epochs": int(trainer.current_epoch),
        "resumed_from_epoch": resumed_from or 0,
    }
    for logger in loggers:
        logger.log_metrics({k: v for k, v in metrics.items() if "/" in k or k == "temperature"})
    checkpoint = Path(cfg.paths.output_dir) / "checkpoints" / "target.pt"
    save_target(target, checkpoint, extra={"metrics": metrics})
    if wandb_runs:
        for run in wandb_runs:
            finish_training_run(run, metrics, checkpoint)
    log.info("test/acc %.4f  temperature %.3f  ECE %.4f -> %.4f  checkpoint %s",
             metrics["test/acc"], temperature, ece_before, ece_after, checkpoint)
    return {**metrics, "checkpoint": str(checkpoint)}


def saved_epochs(path: Path) -> int | None:
    """Epochs finished in the resume checkpoint at ``path``; ``None`` when there is none."""
    if not path.is_file():
        return None

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise AdvauditError(f"the resume checkpoint {path} cannot be read ({str(error).splitlines()[0][:120]}); "
                            "delete it to train from scratch") from None
    return int(state.get("epoch", -1)) + 1
