"""What a run dir records about the run: the config that owns it, and how a failed run ended.

Two records, both read by people and by the multirun callback: the claim of a run dir
(:func:`claim_dir`, training's ``run_config.json`` and the audits' ``audit_fingerprint.json``: the
fingerprint of what the run computes, so a rerun resumes only the same run) and the failure record in
``result.json`` (``status: failed``, a one-line ``error``, ``error_kind``, ``task``, ``config``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from advaudit.core.records import write_json
from advaudit.errors import AdvauditError, RunInterrupted, classify

log = logging.getLogger(__name__)


def write_failure(out: Path, task: str, cfg: DictConfig, error: BaseException,
                  summary: Callable[[DictConfig], dict[str, Any]], beside: bool = False) -> dict[str, Any]:
    """Write the failure record ``<out>/result.json`` (``result.failed.json`` when ``result.json``
    holds a finished run's results, which a refused rerun must not erase, or with ``beside``: a run refused
    a dir that another config owns leaves that config's record alone); returns it.

    ``{"status": "failed", "error": <one line>, "error_kind": "user" | "bug" | "interrupted",
    "task": "train" | "examine", "config": summary(cfg)}`` (the resolved config; unresolved when
    resolving it is what failed).
    """
    interrupt = interruption(error)
    if interrupt is not None:
        kind, message = "interrupted", (f"interrupted by {interrupt}; the records written so far are kept: "
                                        "rerun the same command into this run dir to resume")
    else:
        kind, message = classify(error)
    record = {"status": "failed", "error": message, "error_kind": kind, "task": task}
    try:
        record["config"] = summary(cfg)
    except Exception:  # an interpolation that does not resolve may be the very error
        record["config"] = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    path = out / "result.json"
    if beside or _status(path) == "ok":  # a refused rerun must not erase the finished run's results
        path = out / "result.failed.json"
    try:
        write_json(path, record)
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
_VOLATILE = ("paths", "logger", "callbacks", "threads", "memory", "tags", "device", "optimized_metric", "hydra",
             "audit.stop_after_steps", "dataset.cache_dir", "dataset.num_workers", "world.device",
             "trainer.enable_progress_bar", "trainer.enable_model_summary", "trainer.log_every_n_steps",
             "trainer.default_root_dir", "trainer.accelerator")
RUN_CONFIG = "run_config.json"

#: audit keys that only steer how a run is executed or resumed, not what it examines
#: (not error search's ``pool_chunk``: each chunk of pools is a random stream of its own, so it changes the numbers)
AUDIT_BOOKKEEPING = frozenset({"stop_after_steps", "checkpoint_every", "chunk", "judge",
                               # how one examination is spread over jobs: a merged sharded run equals the unsharded one
                               "shard", "shards"})
#: audit.validity keys that only steer how much is judged, not what is examined (the lazy path is exact;
#: the sample sets only how precisely the invalid share of random conditions is estimated)
VALIDITY_BOOKKEEPING = frozenset({"lazy", "share_sample"})


def audit_design(audit: dict[str, Any], dropped: frozenset[str] = AUDIT_BOOKKEEPING) -> dict[str, Any]:
    """``audit`` (a resolved ``audit`` block) without the keys in ``dropped`` and without
    ``audit.validity``'s :data:`VALIDITY_BOOKKEEPING`: the part that defines what is examined."""
    design = {k: v for k, v in audit.items() if k not in dropped}
    if isinstance(design.get("validity"), dict):
        design["validity"] = {k: v for k, v in design["validity"].items() if k not in VALIDITY_BOOKKEEPING}
    return design


class RunDirConflict(AdvauditError):
    """The run dir holds results of a different config; mixing them would corrupt both."""


def fingerprint_of(design: Any) -> str:
    """16 hex digits of ``design`` (plain data): the sha256 of its sorted JSON."""
    return hashlib.sha256(json.dumps(design, sort_keys=True, default=str).encode()).hexdigest()[:16]


def claim_dir(out: Path, design: dict[str, Any], record: str, held: str, reuse_after_user_error: bool = False) -> str:
    """Claim the run dir ``out`` for ``design`` (what the run computes, as plain data): the one claim scheme of
    training and of every audit.

    ``<out>/<record>`` holds ``{"fingerprint": fingerprint_of(design), "design": design}``. A rerun with the
    same fingerprint resumes what ``out`` holds; one with another is refused in one line naming the first
    keys that changed (``held`` says what the dir holds). With ``reuse_after_user_error`` a dir whose run
    stopped on a user error (before any result: training's config checks) may be claimed again.
    Returns the fingerprint.

    Raises:
        RunDirConflict: ``out`` holds another fingerprint.
    """
    key, path = fingerprint_of(design), out / record
    if path.exists() and not (reuse_after_user_error and _failed_on_user_error(out)):
        try:
            previous = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            previous = None
        if isinstance(previous, dict) and "fingerprint" not in previous:  # a record of the design alone
            previous = {"fingerprint": fingerprint_of(previous), "design": previous}
        if previous is not None and previous.get("fingerprint") != key:
            changed = _differences(previous["design"], design) if "design" in previous else []
            named = f" (changed: {', '.join(changed[:4])}{', ...' if len(changed) > 4 else ''})" if changed else ""
            raise RunDirConflict(f"run dir {out} holds {held}{named}; refusing to mix them: run without "
                                 "hydra.run.dir (a new dir) or delete that dir")
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, {"fingerprint": key, "design": design})
    return key


def claim_run_dir(out: Path, cfg: DictConfig) -> None:
    """Claim ``out`` for a training run (:func:`claim_dir`): its design is the config without the keys that do
    not change what is computed (paths, loggers, threads, ...), recorded in ``<out>/run_config.json``."""
    claim_dir(out, _fingerprint(cfg), RUN_CONFIG, "results of a different config", reuse_after_user_error=True)


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


def _failed_on_user_error(out: Path) -> bool:
    """The earlier run in ``out`` ended on a user error (so it left no results to protect)."""
    return _status(out / "result.json") == ("failed", "user")


def _status(path: Path) -> str | tuple[str, str] | None:
    """``"ok"``, ``("failed", error_kind)`` or ``None`` (no readable record) for ``result.json``."""
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    status = record.get("status", "ok")
    return "ok" if status == "ok" else (status, record.get("error_kind"))
