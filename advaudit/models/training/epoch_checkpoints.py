"""Every training epoch as an auditable target (an advaudit target.pt, not a Lightning .ckpt).

``python train.py ... callbacks.model_checkpoint.save_top_k=-1`` writes
``<run dir>/checkpoints/epochs/epoch_00.pt``, ``epoch_01.pt``, ... in the same self-describing,
``weights_only``-safe format as the final ``checkpoints/target.pt``, so ``examine.py
target=glob:<run dir>/checkpoints/epochs/*.pt`` audits them all in one sweep. Each file records
its ``epoch``, ``global_step`` and the metrics logged so far. The temperature is the model's at
that epoch (1.0: temperature scaling is fitted once, after training, on the final model), so
audits of epoch checkpoints see uncalibrated probabilities; the final target.pt is calibrated.

The options follow Lightning's ModelCheckpoint: ``save_top_k=0`` saves nothing (the default),
``-1`` every epoch, ``k > 0`` the best ``k`` by ``monitor`` (``mode`` max or min), deleting the
others. (It is a plain callback rather than a ModelCheckpoint subclass because the trainer
configs set ``enable_checkpointing=false`` so Lightning writes no .ckpt files of its own.)
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.loggers import WandbLogger

from advaudit.errors import require
from advaudit.models.targets.io import save_target
from advaudit.models.targets.tracking import log_checkpoint_output

log = logging.getLogger(__name__)


class EpochTargets(pl.Callback):
    """Save the module's ``target`` at the end of every ``every_n_epochs``-th epoch (module docstring).

    ``filename``, ``save_top_k``, ``monitor`` and ``mode`` have their defaults in one place,
    ``conf/callbacks/default.yaml`` (which training composes).
    """

    def __init__(self, dirpath: str, *, filename: str, save_top_k: int, monitor: str | None, mode: str,
                 every_n_epochs: int = 1, log_to_wandb: bool = True) -> None:
        require(save_top_k >= -1, f"callbacks.model_checkpoint.save_top_k={save_top_k}; use -1 (every epoch), "
                "0 (none) or k > 0 (the best k by monitor)")
        require(save_top_k in (-1, 0) or monitor is not None,
                f"callbacks.model_checkpoint.save_top_k={save_top_k} keeps the best k and needs a metric: "
                "add callbacks.model_checkpoint.monitor=val/acc (or use save_top_k=-1 for every epoch)")
        require(mode in ("max", "min"), f"callbacks.model_checkpoint.mode={mode!r}; use max or min")
        require(every_n_epochs >= 1, "callbacks.model_checkpoint.every_n_epochs must be >= 1")
        self.dirpath, self.filename = Path(dirpath), filename
        self.save_top_k, self.monitor, self.mode = save_top_k, monitor, mode
        self.every_n_epochs, self.log_to_wandb = every_n_epochs, log_to_wandb
        self.kept: dict[Path, float] = {}

    def on_validation_end(self, trainer: "pl.Trainer", module: "pl.LightningModule") -> None:
        if self.save_top_k == 0 or trainer.sanity_checking or (trainer.current_epoch + 1) % self.every_n_epochs:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if getattr(v, "numel", lambda: 1)() == 1}
        score = None
        if self.monitor is not None:
            require(self.monitor in metrics, f"callbacks.model_checkpoint.monitor={self.monitor!r} is not logged; "
                    f"logged metrics: {sorted(metrics)}")
            score = metrics[self.monitor]
        if self.save_top_k > 0 and len(self.kept) >= self.save_top_k and not self._better_than_worst(score):
            return
        path = self.dirpath / (self.filename.format(epoch=trainer.current_epoch) + ".pt")
        extra = {"epoch": int(trainer.current_epoch), "global_step": int(trainer.global_step), "metrics": metrics}
        if trainer.is_global_zero:
            target = getattr(module, "target", None)
            require(target is not None, f"{type(module).__name__} has no target to save; epoch checkpoints need "
                    "a classifier model (model=cnn, mlp, alexnet, resnet18 or resnet34, or an architecture of your own)")
            save_target(target, path, extra=extra)
            self._log_artifact(trainer, path, extra)
        if self.save_top_k > 0:
            self.kept[path] = float(score)  # type: ignore[arg-type]
            if len(self.kept) > self.save_top_k:
                worst = self._worst()
                self.kept.pop(worst)
                worst.unlink(missing_ok=True)

    def _worst(self) -> Path:
        pick = min if self.mode == "max" else max
        return pick(self.kept, key=self.kept.__getitem__)

    def _better_than_worst(self, score: float | None) -> bool:
        worst = self.kept[self._worst()]
        return score is not None and (score > worst if self.mode == "max" else score < worst)

    def _log_artifact(self, trainer: "pl.Trainer", path: Path, extra: dict[str, Any]) -> None:
        """Each saved target as an output model artifact of the training's W&B run (if any)."""
        if not self.log_to_wandb:
            return
        for logger in trainer.loggers:
            if isinstance(logger, WandbLogger):
                try:
                    log_checkpoint_output(logger.experiment, path, [f"epoch-{extra['epoch']}"], extra)
                except Exception as error:  # logging must never stop training
                    log.warning("could not log %s to W&B: %s", path, error)

    def state_dict(self) -> dict[str, Any]:
        return {"kept": {str(k): v for k, v in self.kept.items()}}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.kept = {Path(k): float(v) for k, v in state_dict.get("kept", {}).items()}
