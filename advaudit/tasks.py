"""The two entry points: ``train(cfg)`` and ``examine(cfg)``; train.py / examine.py only call these."""

from __future__ import annotations

import importlib
import logging
import time
from functools import wraps
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from advaudit.errors import AdvauditError, require
from advaudit.report.records import write_json
from advaudit.report.wandb_run import finish_any_wandb_run
from advaudit.runtime import configure_threads, seed_everything

log = logging.getLogger(__name__)

TRAINERS: dict[str, str] = {
    "classifier": "advaudit.models.classifier_training:train_classifier",
    "sklearn": "advaudit.models.sklearn_training:train_sklearn",
    "generator": "advaudit.models.generator_training:train_generator",
}


def _resolve(spec: str) -> Callable[[DictConfig], dict[str, Any]]:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def task_wrapper(task: Callable[[DictConfig], dict[str, Any]]) -> Callable[[DictConfig], dict[str, Any]]:
    """Set threads and seeds, time the task, and always close W&B (so one failing job of a
    multirun does not poison the next); errors are re-raised."""

    @wraps(task)
    def wrapped(cfg: DictConfig) -> dict[str, Any]:
        configure_threads(cfg.get("threads"))
        seed_everything(int(cfg.get("seed", 0)))
        start = time.perf_counter()
        try:
            result = task(cfg)
        except Exception:
            log.exception("%s failed", task.__name__)
            raise
        finally:
            finish_any_wandb_run()
        result["seconds"] = round(time.perf_counter() - start, 2)
        write_json(Path(cfg.paths.output_dir) / "result.json", {**result, "config": _summary(cfg)})
        return result

    return wrapped


def _summary(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data, without Hydra internals."""
    container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    container.pop("hydra", None)
    return container


@task_wrapper
def train(cfg: DictConfig) -> dict[str, Any]:
    """Train ``cfg.model`` on ``cfg.dataset``; dispatches on ``cfg.model.kind`` (see TRAINERS)."""
    kind = cfg.model.get("kind", "classifier")
    require(kind in TRAINERS, f"model.kind={kind!r} is unknown; use one of {sorted(TRAINERS)}")
    return {"task": "train", "model_kind": kind, **_resolve(TRAINERS[kind])(cfg)}


@task_wrapper
def examine(cfg: DictConfig) -> dict[str, Any]:
    """Run the audit named by ``cfg.audit.run`` (a function in ``advaudit.audits``)."""
    spec = str(cfg.audit.run)
    if not spec.startswith("advaudit.audits."):
        raise AdvauditError(f"audit.run={spec!r} must name a function in advaudit.audits")
    module, _, name = spec.rpartition(".")
    run = getattr(importlib.import_module(module), name)
    return {"task": "examine", "audit": cfg.audit.name, "target": cfg.get("target"), **run(cfg)}
