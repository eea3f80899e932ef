"""The two entry points: ``train(cfg)`` and ``examine(cfg)``; train.py / examine.py only call these."""

from __future__ import annotations

import importlib
import json
import logging
import time
from functools import wraps
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from advaudit.config import plain_config, validate
from advaudit.errors import AdvauditError, RunInterrupted, classify, require
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
    """Validate the config, claim the run dir, run the task and record how it ended.

    Before any work: threads and seeds are set, :func:`advaudit.config.validate` checks the config
    (every problem at once), and the run dir is claimed for this config (:func:`claim_run_dir`).
    ``result.json`` ends with ``"status": "ok"`` and the task's results, or ``"status": "failed"``
    with a one-line ``error``, ``error_kind`` (``user``, ``bug`` or ``interrupted``), the ``task``
    and the resolved ``config``; the exception is re-raised for the command-line boundary
    (:mod:`advaudit.cli`) to turn into a message and an exit code. W&B is always closed, so one
    failing job of a multirun does not poison the next.
    """

    @wraps(task)
    def wrapped(cfg: DictConfig) -> dict[str, Any]:
        name = task.__name__
        out = Path(cfg.paths.output_dir)
        configure_threads(cfg.get("threads"))
        seed_everything(int(cfg.get("seed", 0)))
        start = time.perf_counter()
        try:
            validate(cfg, name)
            cfg = plain_config(cfg)
            claim_run_dir(out, cfg)
            result = task(cfg)
        except RunDirConflict:
            raise  # the run dir belongs to another config: its result.json is not ours to overwrite
        except BaseException as error:
            write_failure(out, name, cfg, error)
            raise
        finally:
            finish_any_wandb_run()
        result["seconds"] = round(time.perf_counter() - start, 2)
        write_json(out / "result.json", {"status": "ok", **result, "config": _summary(cfg)})
        return result

    return wrapped


def write_failure(out: Path, task: str, cfg: DictConfig, error: BaseException) -> dict[str, Any]:
    """Write the failure record ``<out>/result.json`` (see :func:`task_wrapper`); returns it."""
    interrupt = interruption(error)
    if interrupt is not None:
        kind, message = "interrupted", (f"interrupted by {interrupt}; the records written so far are kept: "
                                        "rerun the same command into this run dir to resume")
    else:
        kind, message = classify(error)
    record = {"status": "failed", "error": message, "error_kind": kind, "task": task}
    try:
        record["config"] = _summary(cfg)
    except Exception:  # an interpolation that does not resolve may be the very error
        record["config"] = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    try:
        write_json(out / "result.json", record)
    except OSError as write_error:  # the run dir itself may be the problem; the message still reaches the user
        log.warning("could not write the failure record to %s: %s", out, write_error)
    return record


def interruption(error: BaseException) -> str | None:
    """``"SIGINT"``/``"SIGTERM"`` when ``error`` (or what it interrupted) is a stop request, else ``None``."""
    item: BaseException | None = error
    seen = 0
    while item is not None and seen < 10:
        if isinstance(item, RunInterrupted):
            return item.signal_name
        if isinstance(item, KeyboardInterrupt):
            return "SIGINT"
        if type(item).__name__ == "SIGTERMException":
            return "SIGTERM"
        item, seen = item.__cause__ or item.__context__, seen + 1
    return None


#: keys that do not change what a run computes: a rerun may differ in these and still resume
_VOLATILE = ("paths", "logger", "callbacks", "threads", "tags", "device", "optimized_metric", "hydra",
             "audit.stop_after_steps", "dataset.cache_dir", "dataset.num_workers", "world.device",
             "trainer.enable_progress_bar", "trainer.enable_model_summary", "trainer.log_every_n_steps",
             "trainer.default_root_dir", "trainer.accelerator")
RUN_CONFIG = "run_config.json"


class RunDirConflict(AdvauditError):
    """The run dir holds results of a different config; mixing them would corrupt both."""


def claim_run_dir(out: Path, cfg: DictConfig) -> None:
    """Record the config that owns ``out``; refuse a rerun with a different one.

    ``<out>/run_config.json`` holds the resolved config without the keys that do not change what
    is computed (paths, loggers, threads, ``audit.stop_after_steps``, ...). A rerun with the same
    config resumes from the records in ``out``; one with another config is refused, naming the
    first keys that differ.
    """
    fingerprint = _fingerprint(cfg)
    path = out / RUN_CONFIG
    if path.exists():
        try:
            previous = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            previous = None
        if previous is not None and previous != fingerprint:
            changed = _differences(previous, fingerprint)
            raise RunDirConflict(f"run dir {out} holds results of a different config (changed: {', '.join(changed[:4])}"
                                 f"{', ...' if len(changed) > 4 else ''}); refusing to mix them: run without "
                                 "hydra.run.dir (a new dir) or delete that dir")
    write_json(path, fingerprint)


def _fingerprint(cfg: DictConfig) -> dict[str, Any]:
    container = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    for key in _VOLATILE:
        head, _, tail = key.partition(".")
        if not tail:
            container.pop(head, None)
        elif isinstance(container.get(head), dict):
            container[head].pop(tail, None)
    return json.loads(json.dumps(container, sort_keys=True, default=str))


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ, as ``key: old -> new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    if old == new:
        return []
    return [f"{prefix.rstrip('.')}: {json.dumps(old)} -> {json.dumps(new)}"]


def _summary(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data, without Hydra internals."""
    container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False, enum_to_str=True)
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
