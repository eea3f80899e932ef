"""W&B runs that read or write checkpoints: lineage from a training run to every audit of its checkpoint.

A training run logs its checkpoint as an output artifact (:func:`finish_training_run`,
:func:`log_checkpoint_output`); an audit's run (:func:`open_wandb`) declares the checkpoints it
reads (``cfg.target``, ``cfg.generator``) as inputs, under the same artifact name, with the
metadata read from the checkpoint (architecture, classes, input shape, dataset, training metrics);
a model on an inference server is an ``endpoint`` artifact (:func:`endpoint_artifact`). A comparison's
run declares the checkpoints or endpoints and the audit runs it read (:func:`declare_comparison_inputs`).
The W&B settings, tags and run wrappers these use are :mod:`advaudit.core.wandb_run`'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from omegaconf import DictConfig, OmegaConf

from advaudit.core.naming import short_name
from advaudit.core.wandb_run import LoggedRun, NullRun, resolved_config, run_tags, wandb_settings
from advaudit.errors import AdvauditError
from advaudit.models.targets.formats.checkpoint import load_checkpoint
from advaudit.models.targets.formats import identify
from advaudit.models.targets.imported.spec import endpoint_label, file_sha256
from advaudit.models.targets.imported.store import trust_record


@contextmanager
def open_wandb(cfg: DictConfig, job_type: str, name: str | None = None) -> Iterator[NullRun]:
    """Open a W&B run for ``cfg`` under ``cfg.paths.output_dir``; always finished on exit.

    ``job_type="examine"`` becomes the audit's name; the checkpoints the run reads
    (``cfg.target``, ``cfg.generator``) are declared as its input artifacts (module docstring).
    """
    settings = wandb_settings(cfg)
    if settings["mode"] == "disabled":
        yield NullRun()
        return
    import wandb  # not imported at all when W&B is disabled

    audit = OmegaConf.select(cfg, "audit.name", default=None)
    job_type = str(audit) if job_type == "examine" and audit else job_type
    output_dir = Path(OmegaConf.select(cfg, "paths.output_dir", default=".") or ".")
    output_dir.mkdir(parents=True, exist_ok=True)
    run = wandb.init(project=settings["project"], mode=settings["mode"], group=settings["group"],
                     tags=run_tags(cfg, settings["tags"]), job_type=job_type, name=name, dir=str(output_dir),
                     config=resolved_config(cfg), reinit="finish_previous")
    failed = True
    try:
        for key in ("target", "generator"):
            value = OmegaConf.select(cfg, key, default=None)
            if isinstance(value, DictConfig) and value.get("endpoint") is not None:  # a served model
                declare_input(run, endpoint_artifact(OmegaConf.to_container(value.endpoint, resolve=True)))
                continue
            path, extra = input_file(value)
            if path is not None:
                declare_checkpoint_input(run, path, extra)
        yield LoggedRun(run)
        failed = False
    finally:
        run.finish(exit_code=1 if failed else 0)


def input_file(value: Any) -> tuple[Path | None, dict[str, Any]]:
    """The model file a ``target`` / ``generator`` value reads, and metadata a target block adds to it."""
    if isinstance(value, str):
        path = Path(value).expanduser()
        return (path, {}) if path.is_file() else (None, {})
    if isinstance(value, (DictConfig, Mapping)) and value.get("path") is not None:
        path = Path(str(value["path"])).expanduser()
        block = OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else dict(value)
        return (path, {"target_block": block, "loading": trust_record(block)}) if path.is_file() else (None, {})
    return None, {}


def artifact_name(path: Path, kind: str) -> str:
    """A stable W&B artifact name for a checkpoint file: ``<kind>-<run>-<stem>-<hash of the path>``."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", short_name(str(path))).strip("-")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"{kind}-{readable}-{digest}"[:120]


def checkpoint_metadata(path: Path) -> tuple[str, dict[str, Any]]:
    """``(kind, metadata)`` of an advaudit checkpoint: what identifies the model, as plain data."""
    try:
        payload = load_checkpoint(path)
    except AdvauditError:  # a model file of another format, named by a target block
        return "model", {"path": str(path.resolve()), "format": identify(path).kind, "sha256": file_sha256(path)}
    meta = dict(payload.get("meta") or {})
    config = meta.pop("config", None) or {}
    metadata = {"path": str(path.resolve()), "kind": payload.get("kind"), "backend": payload.get("backend"),
                "temperature": payload.get("temperature"), "metrics": payload.get("metrics"),
                "epoch": payload.get("epoch"), "seed": config.get("seed") if isinstance(config, dict) else None,
                **{k: v for k, v in meta.items() if isinstance(v, (str, int, float, list, dict, bool))}}
    return str(payload.get("kind") or "model"), {k: v for k, v in metadata.items() if v is not None}


def checkpoint_artifact(path: Path, aliases_metadata: Mapping[str, Any] | None = None) -> Any:
    """A W&B model Artifact holding the checkpoint file and its metadata."""
    import wandb  # optional at run time (W&B disabled): imported when an artifact is made

    kind, metadata = checkpoint_metadata(path)
    artifact = wandb.Artifact(artifact_name(path, kind), type="model", metadata={**metadata, **(aliases_metadata or {})},
                              description=f"advaudit {kind} checkpoint {path.name}")
    artifact.add_file(str(path), name=path.name)
    return artifact


def declare_checkpoint_input(run: Any, path: Path, metadata: Mapping[str, Any] | None = None,
                             aliases: list[str] | None = None) -> Any:
    """Declare the checkpoint at ``path`` an input of ``run`` (lineage), online or offline (:func:`declare_input`)."""
    return declare_input(run, checkpoint_artifact(path, metadata), aliases)


def declare_input(run: Any, artifact: Any, aliases: list[str] | None = None) -> Any:
    """Declare ``artifact`` an input of ``run`` with the alias ``latest`` and ``aliases``.

    Online this is ``run.use_artifact``. Offline, ``use_artifact`` refuses (wandb 0.31: "Cannot
    use artifact when in offline mode"), so the artifact is written as a record flagged
    ``use_after_commit`` (what ``use_artifact`` itself does for a new artifact): ``wandb sync``
    then creates the artifact version and marks it as this run's input.
    """
    aliases = list(dict.fromkeys(["latest", *(aliases or [])]))
    if run.settings.mode != "offline":
        return run.use_artifact(artifact, aliases=aliases)
    run._log_artifact(artifact, aliases=aliases, is_user_created=True, use_after_commit=True)
    return artifact


def endpoint_artifact(block: Mapping[str, Any], record: Mapping[str, Any] | None = None) -> Any:
    """A W&B model Artifact for a model on a server: ``endpoint.json`` with its address, model and the version
    the server reported (the names of credential variables at most, never their values)."""
    import wandb  # optional at run time (W&B disabled): imported when an artifact is made

    address = endpoint_label(block)
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{block.get('model')}").strip("-")
    digest = hashlib.sha1(address.encode()).hexdigest()[:8]
    described = {"endpoint": address, "model": block.get("model"), "version": block.get("version"),
                 **{k: (record or {}).get(k) for k in ("model_version", "server")}}
    described = {k: v for k, v in described.items() if v not in (None, {}, "")}
    artifact = wandb.Artifact(f"endpoint-{readable}-{digest}"[:120], type="model", metadata=described,
                              description=f"advaudit target on an inference server: {address}")
    with artifact.new_file("endpoint.json") as handle:
        handle.write(json.dumps(described, indent=1))
    return artifact


def audit_run_artifact(run_dir: Path, audit: str | None, target: str | None) -> Any:
    """A W&B Artifact (type ``audit``) holding an audit run's ``result.json``: what a comparison read."""
    import wandb  # optional at run time (W&B disabled): imported when an artifact is made

    artifact = wandb.Artifact(artifact_name(Path(run_dir) / "result.json", "audit"), type="audit",
                              metadata={"run_dir": str(Path(run_dir).resolve()), "audit": audit, "target": target},
                              description=f"advaudit {audit} run {Path(run_dir).name}")
    artifact.add_file(str(Path(run_dir) / "result.json"), name="result.json")
    return artifact


def declare_comparison_inputs(run: Any, records: list[Any], aliases: Mapping[str, list[str]] | None = None) -> None:
    """Declare what a comparison read as ``run``'s inputs: each audited checkpoint file or endpoint once (with
    ``aliases[target]``, e.g. the alias of a candidate that passed the gate) and each audit run's result.json.
    ``records``: :class:`advaudit.compare.records.RunRecord`-like (``ok``, ``run_dir``, ``audit``, ``target``,
    ``config``, ``result``)."""
    aliases, seen = dict(aliases or {}), set()
    for record in records:
        if not record.ok:
            continue
        value = record.config.get("target")
        if record.target not in seen:
            seen.add(record.target)
            extra = list(aliases.get(str(record.target), []))
            if isinstance(value, Mapping) and isinstance(value.get("endpoint"), Mapping):
                declare_input(run, endpoint_artifact(value["endpoint"], record.result.get("endpoint")), extra)
            else:
                path, metadata = input_file(value)
                if path is not None:
                    declare_checkpoint_input(run, path, metadata, extra)
        declare_input(run, audit_run_artifact(record.run_dir, record.audit, record.target))


def log_checkpoint_output(run: Any, path: Path, aliases: list[str], metadata: Mapping[str, Any]) -> Any:
    """Log the checkpoint at ``path`` as an output artifact of (training) ``run``."""
    artifact = checkpoint_artifact(path, metadata)
    run.log_artifact(artifact, aliases=aliases)
    return artifact


def track_training_run(run: Any, cfg: DictConfig | Mapping[str, Any]) -> None:
    """Give a training run (Lightning's ``WandbLogger`` run) what an audit's run has from the start:
    the resolved config and the run tags (the config's tags plus the model and the seed); its group
    comes from ``logger.wandb.group`` (the sweep's id inside a multirun)."""
    run.config.update(resolved_config(cfg), allow_val_change=True)
    cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(dict(cfg))
    run.tags = tuple(run_tags(cfg, [str(t) for t in (run.tags or ())]))


def finish_training_run(run: Any, metrics: Mapping[str, Any], checkpoint: Path) -> None:
    """The final metrics in a training run's summary, its checkpoint as the run's output artifact
    (the same name the audits of that checkpoint declare as their input: lineage); then the run
    is finished."""
    LoggedRun(run).set_summary(metrics)
    log_checkpoint_output(run, Path(checkpoint), ["latest"], {"final_metrics": dict(metrics)})
    run.finish(exit_code=0)  # finished here as a success: the task wrapper closes a run left open as failed
