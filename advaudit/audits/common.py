"""Pieces every audit needs: the target under audit, its data, its device."""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from advaudit.data.base import ArrayDataModule
from advaudit.errors import require
from advaudit.models import Target
from advaudit.models.imported.store import load_any_target
from advaudit.runtime import resolve_device


def load_audit_target(cfg: DictConfig) -> Target:
    """Load ``cfg.target`` onto ``cfg.device``: a target file (advaudit's own or imported) or a target block
    (:mod:`advaudit.models.imported`), with a clear error if unset."""
    value = cfg.get("target")
    require(value is not None, "no target given; add target=<path/to/target.pt> (written by train.py "
            "under <run dir>/checkpoints/, or by `advaudit import`) or a target block (README: Audit a model you "
            "already have)")
    device = resolve_device(cfg.get("device", "auto"))
    return load_any_target(value, device=str(device), seed=int(cfg.get("seed", 0)))


def target_datamodule(target: Target, override: DictConfig | None = None) -> ArrayDataModule:
    """The dataset ``target`` was trained on (from its checkpoint), or ``override`` when given.

    The stored config is rebuilt without its training-split bias options' effect on test data
    being lost: test-time shifts stay as they were at training time unless overridden.
    """
    if override is not None:
        return instantiate(override)
    stored: Any = target.meta.get("config", {}).get("dataset")
    require(stored is not None, "this checkpoint does not record its dataset; pass audit.dataset=<config>")
    datamodule = instantiate(OmegaConf.create(stored))
    datamodule.setup()
    return datamodule
