"""The two entry points: ``train(cfg)`` and ``examine(cfg)``; train.py / examine.py only call these."""

from __future__ import annotations

import logging
import time
from functools import wraps
from pathlib import Path
from typing import Any, Callable

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from advaudit.validation import plain_config, validate
from advaudit.confutil import named_object
from advaudit.core.records import write_json
from advaudit.core.run_records import RunDirConflict, claim_run_dir, write_failure
from advaudit.core.wandb_run import finish_any_wandb_run
from advaudit.errors import require
from advaudit.models.targets.endpoint import CLIENTS
from advaudit.models.targets.imported.spec import target_label
from advaudit.models.targets.imported.store import trust_record
from advaudit.runtime import configure_memory, configure_threads, seed_everything

log = logging.getLogger(__name__)

Task = Callable[[DictConfig], dict[str, Any]]


def task_wrapper(claims_dir: bool = False) -> Callable[[Task], Task]:
    """Validate the config, run the task and record how it ended.

    Before any work: threads and seeds are set and :func:`advaudit.config.validate` checks the
    config (every problem at once); with ``claims_dir`` the run dir is claimed for this config
    (:func:`advaudit.core.run_records.claim_run_dir`: a rerun with another config is refused). The audits
    claim theirs the same way (:func:`advaudit.core.run_records.claim_dir`, through
    :class:`advaudit.audits.lifecycle.RunDir`), each by the keys that change what it examines.
    ``result.json`` ends with ``"status": "ok"`` and the task's results, or the failure record of
    :func:`advaudit.core.run_records.write_failure`; the exception is re-raised for the command-line
    boundary (:mod:`advaudit.cli`) to turn into a message and an exit code. W&B is always closed,
    so one failing job of a multirun does not poison the next.
    """

    def decorate(task: Task) -> Task:
        @wraps(task)
        def wrapped(cfg: DictConfig) -> dict[str, Any]:
            name = task.__name__
            out = Path(cfg.paths.output_dir)
            configure_threads(cfg.get("threads"))
            seed_everything(int(cfg.get("seed", 0)))
            start = time.perf_counter()
            try:
                validate(cfg, name)
                configure_memory(str(cfg.get("memory", "keep")))
                cfg = plain_config(cfg)
                if claims_dir:
                    claim_run_dir(out, cfg)
                result = task(cfg)
            except RunDirConflict as error:  # training's or an audit's (core.run_records.claim_dir)
                # the run dir belongs to another config: its result.json is not ours to overwrite
                write_failure(out, name, cfg, error, _summary, beside=True)
                raise
            except BaseException as error:
                write_failure(out, name, cfg, error, _summary)
                raise
            finally:
                finish_any_wandb_run()
            result["seconds"] = round(time.perf_counter() - start, 2)
            write_json(out / "result.json", {"status": "ok", **result, "config": _summary(cfg)})
            return result

        return wrapped

    return decorate


def _summary(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data, without Hydra internals."""
    container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False, enum_to_str=True)
    container.pop("hydra", None)
    return container


def named_function(block: Any, where: str) -> Callable[[DictConfig], dict[str, Any]]:
    """The function a ``{_target_: ..., _partial_: true}`` block of the config names, to be called with the
    run's config (``audit.run``, ``model.train``). Code runs here because the user's config names it.

    Raises:
        AdvauditError: one line when the block is not such a block or its ``_target_`` cannot be imported.
    """
    given = OmegaConf.to_container(block) if isinstance(block, DictConfig) else block
    require(isinstance(block, DictConfig) and "_target_" in block and block.get("_partial_") is True,
            f"{where} must be a block {{_target_: <module.function>, _partial_: true}} naming a function the task "
            f"calls with the run's config, not {given!r}")
    named_object(str(block._target_), where)
    return instantiate(block)


@task_wrapper(claims_dir=True)
def train(cfg: DictConfig) -> dict[str, Any]:
    """Train ``cfg.model`` on ``cfg.dataset`` with the function ``cfg.model.train`` names."""
    fit = named_function(cfg.model.get("train"), "model.train")
    return {"task": "train", "trainer": str(cfg.model.train._target_), **fit(cfg)}


@task_wrapper()
def examine(cfg: DictConfig) -> dict[str, Any]:
    """Run the audit whose loop ``cfg.audit.run`` names (``run(cfg) -> dict``)."""
    run = named_function(cfg.audit.get("run"), "audit.run")
    target = cfg.get("target")
    identity = {"target": target_label(target), "target_loading": trust_record(target)} if target is not None else {}
    # the question a comparison of this run answers first, declared before any data: compare.primary, else
    # the audit's own headline metric (audit.metric; advaudit.compare.verdict)
    primary = OmegaConf.select(cfg, "compare.primary") or OmegaConf.select(cfg, "audit.metric")
    known = len(CLIENTS)
    result = {"task": "examine", "audit": cfg.audit.name, "target": None, "primary": primary, **identity, **run(cfg)}
    endpoints = [client.record() for client in CLIENTS[known:]]  # the servers this run queried
    for record in endpoints:
        log.info("endpoint %s (model version %s%s): %d inputs in %d requests as %s, %.1f s waiting on it",
                 record["endpoint"], record["model_version"] or "not reported",
                 "".join(f", {' '.join(record['server'].values())}" for _ in [0] if record["server"]),
                 record["inputs"], record["requests"],
                 record.get("sent_as") or ("binary tensors" if record.get("binary") else "JSON"),
                 record["seconds_waiting"])
    return {**result, "endpoint": endpoints[0]} if len(endpoints) == 1 else (
        {**result, "endpoints": endpoints} if endpoints else result)
