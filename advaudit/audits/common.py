"""Pieces every audit needs: the target under audit, its data, its device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from advaudit.data.base import ArrayDataModule
from advaudit.errors import require
from advaudit.models import Target, load_target
from advaudit.runtime import resolve_device


def load_audit_target(cfg: DictConfig) -> Target:
    """Load ``cfg.target`` (a target.pt path) onto ``cfg.device``, with a clear error if unset."""
    path = cfg.get("target")
    require(path is not None, "no target given; add target=<path/to/target.pt> (written by train.py "
            "under <run dir>/checkpoints/)")
    device = resolve_device(cfg.get("device", "auto"))
    return load_target(Path(str(path)).expanduser(), map_location=str(device))


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
