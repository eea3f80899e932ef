"""W&B runs for a team, that never need a network: offline by default, ``disabled`` honoured.

Mode comes from ``cfg.logger.wandb.mode`` (which defaults to ``${oc.env:WANDB_MODE,offline}``) so
one job of a multirun never leaks its mode into the next (unlike ``WandbLogger(offline=True)``).

Every run, training runs (Lightning's ``WandbLogger``, completed by :func:`track_training_run` and
:func:`finish_training_run`) as well as audits, is set up so a team can compare runs in W&B's run
table:

- ``group`` = the multirun's id (``<task>-<sweep folder>``; the task name for a single run), so a
  sweep's jobs sit together; ``job_type`` = the audit (``worst_case``, ``evaluate``, ...);
- ``tags`` from the config (``tags``, the audit, the examiner or search method, the seed);
- the RESOLVED config (no ``${seed}``-style strings), and the headline numbers in the summary;
- lineage: a training run logs its checkpoint as an output and every audit declares the checkpoint
  under audit (and the generator, for fault tests) an input, as a W&B model Artifact carrying its
  metadata (architecture, classes, input shape, dataset, training metrics), so W&B links every
  audit of a checkpoint to the run that trained it.

Offline runs keep all of this in ``<run dir>/wandb/offline-run-*`` and ``wandb sync`` uploads it
later; :mod:`advaudit.report.wandb_offline` reads those files back.
"""

from __future__ import annotations

import hashlib
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from omegaconf import DictConfig, ListConfig, OmegaConf


def sweep_id() -> str | None:
    """``<sweep folder name>`` when running inside a Hydra multirun, else None."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        if not HydraConfig.initialized():
            return None
        hydra_cfg = HydraConfig.get()
        if hydra_cfg.mode != RunMode.MULTIRUN:
            return None
        return Path(str(hydra_cfg.sweep.dir)).name
    except Exception:  # no Hydra (library use, tests): not a sweep
        return None


def run_group(task_name: str) -> str:
    """The W&B group of this job: ``<task>-<sweep id>`` in a multirun, else ``<task>``."""
    sweep = sweep_id()
    return f"{task_name}-{sweep}" if sweep else task_name


def wandb_settings(cfg: DictConfig) -> dict[str, Any]:
    """The W&B options of ``cfg.logger.wandb`` (with defaults when the logger group is absent).

    Only the keys used here are resolved, so a config whose other values need Hydra's runtime
    (``${hydra:...}``, e.g. at the end of a multirun) still gives its settings.
    """
    logger = OmegaConf.select(cfg, "logger.wandb", default=None)

    def option(key: str) -> Any:
        if logger is None:
            return None
        value = OmegaConf.select(logger, key, default=None, throw_on_resolution_failure=False)
        return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value

    mode = option("mode") or os.environ.get("WANDB_MODE", "offline")
    if logger is None and OmegaConf.select(cfg, "logger", default=None) is not None:
        mode = "disabled"  # a logger group without wandb (logger=none / csv) means: no W&B
    task = str(OmegaConf.select(cfg, "task_name", default=None, throw_on_resolution_failure=False) or "advaudit")
    return {"project": option("project") or "advaudit", "mode": mode, "group": option("group") or run_group(task),
            "tags": [str(t) for t in option("tags") or []]}


def run_tags(cfg: DictConfig, base: list[str]) -> list[str]:
    """``base`` tags plus the audit, its examiner or search method, the model and the seed."""
    audit = OmegaConf.select(cfg, "audit.name", default=None)
    method_key = {"worst_case": "examiner.name", "error_search": "search.name"}.get(str(audit))
    values = [audit, OmegaConf.select(cfg, method_key, default=None) if method_key else None,
              OmegaConf.select(cfg, "model.arch", default=None)]
    seed = OmegaConf.select(cfg, "seed", default=None)
    tags = [*base, *(str(v) for v in values if v is not None), *([f"seed={seed}"] if seed is not None else [])]
    return list(dict.fromkeys(t[:64] for t in tags if t))  # W&B tags are at most 64 characters


def resolved_config(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    """``cfg`` as resolved plain data, without the hydra node (unresolvable values kept as written)."""
    if not isinstance(cfg, DictConfig):
        return {k: v for k, v in dict(cfg).items() if k != "hydra"}
    try:
        container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    except Exception:  # an interpolation that only resolves inside Hydra (e.g. ${hydra:...})
        container = OmegaConf.to_container(cfg, resolve=False)
    container.pop("hydra", None)  # type: ignore[union-attr]
    return container  # type: ignore[return-value]


class _NullRun:
    """Stands in for a W&B run when W&B is disabled."""

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        pass

    def log_image(self, key: str, path: str | Path) -> None:
        pass

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        pass

    def set_summary(self, data: Mapping[str, Any]) -> None:
        pass


class _Run(_NullRun):
    def __init__(self, run: Any) -> None:
        self.run = run

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        self.run.log(data, step=step)
        self.set_summary({k: v for k, v in data.items() if "/" in k})

    def log_image(self, key: str, path: str | Path) -> None:
        import wandb

        self.run.log({key: wandb.Image(str(path))})

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        import wandb

        if rows:
            columns = list(dict.fromkeys(c for r in rows for c in r))
            self.run.log({key: wandb.Table(columns=columns, data=[[_cell(r.get(c)) for c in columns] for r in rows])})

    def set_summary(self, data: Mapping[str, Any]) -> None:
        """Headline numbers in the run's summary (the columns of W&B's run table)."""
        for key, value in data.items():
            if isinstance(value, (int, float, str)) and not isinstance(value, bool) or value is None:
                self.run.summary[key] = value


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


@contextmanager
def open_wandb(cfg: DictConfig, job_type: str, name: str | None = None) -> Iterator[_NullRun]:
    """Open a W&B run for ``cfg`` under ``cfg.paths.output_dir``; always finished on exit.

    ``job_type="examine"`` becomes the audit's name; the checkpoints the run reads
    (``cfg.target``, ``cfg.generator``) are declared as its input artifacts (module docstring).
    """
    settings = wandb_settings(cfg)
    if settings["mode"] == "disabled":
        yield _NullRun()
        return
    import wandb

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
            path, extra = input_file(OmegaConf.select(cfg, key, default=None))
            if path is not None:
                declare_checkpoint_input(run, path, extra)
        yield _Run(run)
        failed = False
    finally:
        run.finish(exit_code=1 if failed else 0)


def input_file(value: Any) -> tuple[Path | None, dict[str, Any]]:
    """The model file a ``target`` / ``generator`` value reads, and metadata a target block adds to it."""
    if isinstance(value, str):
        path = Path(value).expanduser()
        return (path, {}) if path.is_file() else (None, {})
    if isinstance(value, DictConfig) and value.get("path") is not None:
        from advaudit.models.imported.store import trust_record

        path = Path(str(value.path)).expanduser()
        block = OmegaConf.to_container(value, resolve=True)
        return (path, {"target_block": block, "loading": trust_record(block)}) if path.is_file() else (None, {})
    return None, {}


def artifact_name(path: Path, kind: str) -> str:
    """A stable W&B artifact name for a checkpoint file: ``<kind>-<run>-<stem>-<hash of the path>``."""
    from advaudit.compare.naming import short_name

    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", short_name(str(path))).strip("-")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"{kind}-{readable}-{digest}"[:120]


def checkpoint_metadata(path: Path) -> tuple[str, dict[str, Any]]:
    """``(kind, metadata)`` of an advaudit checkpoint: what identifies the model, as plain data."""
    from advaudit.errors import AdvauditError
    from advaudit.models.checkpoint import load_checkpoint
    from advaudit.models.imported.formats import identify
    from advaudit.models.imported.spec import file_sha256

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
    import wandb

    kind, metadata = checkpoint_metadata(path)
    artifact = wandb.Artifact(artifact_name(path, kind), type="model", metadata={**metadata, **(aliases_metadata or {})},
                              description=f"advaudit {kind} checkpoint {path.name}")
    artifact.add_file(str(path), name=path.name)
    return artifact


def declare_checkpoint_input(run: Any, path: Path, metadata: Mapping[str, Any] | None = None) -> Any:
    """Declare the checkpoint at ``path`` an input of ``run`` (lineage), online or offline.

    Online this is ``run.use_artifact``. Offline, ``use_artifact`` refuses (wandb 0.31: "Cannot
    use artifact when in offline mode"), so the artifact is written as a record flagged
    ``use_after_commit`` (what ``use_artifact`` itself does for a new artifact): ``wandb sync``
    then creates the artifact version and marks it as this run's input.
    """
    artifact = checkpoint_artifact(path, metadata)
    if run.settings.mode != "offline":
        return run.use_artifact(artifact)
    run._log_artifact(artifact, aliases=["latest"], is_user_created=True, use_after_commit=True)
    return artifact


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
    _Run(run).set_summary(metrics)
    log_checkpoint_output(run, Path(checkpoint), ["latest"], {"final_metrics": dict(metrics)})
    run.finish(exit_code=0)  # finished here as a success: the task wrapper closes a run left open as failed


def log_comparison(summary: dict[str, Any], out: Path, config: DictConfig | Mapping[str, Any] | None = None,
                   sweep_id: str | None = None) -> None:
    """Log a comparison (``advaudit.compare``) as W&B Tables and images, in its sweep's group."""
    cfg = config if isinstance(config, DictConfig) else OmegaConf.create(dict(config or {}))
    settings = wandb_settings(cfg)
    if settings["mode"] == "disabled":
        return
    import wandb

    task = str(OmegaConf.select(cfg, "task_name", default="examine") or "examine")
    # the sweep's group: the one its jobs were given (logger.wandb.group, e.g. one group for a
    # whole demo), else <task>-<sweep id> as the jobs' default resolver gives it inside Hydra
    default = settings["group"] in (task, run_group(task))
    group = f"{task}-{sweep_id}" if sweep_id and default else settings["group"]
    run = wandb.init(project=settings["project"], mode=settings["mode"], group=group, job_type="compare",
                     name=f"compare-{sweep_id}" if sweep_id else "compare", dir=str(out), tags=settings["tags"],
                     config={"runs": summary["runs"], "failed": len(summary["failed"])}, reinit="finish_previous")
    failed = True
    try:
        logged = _Run(run)
        for group in summary["groups"]:
            slug = group["slug"]
            for table in ("checkpoints", "pairs", "per_class"):
                logged.log_table(f"compare/{slug}/{table}", group.get(table) or [])
            logged.log_table(f"compare/{slug}/per_factor", [{k: v for k, v in r.items() if k != "values"}
                                                            for r in group.get("per_factor") or []])
            if "replay" in group:
                transfer = group["replay"]["transfer"]
                logged.log_table(f"compare/{slug}/replay", [{"worst_conditions_of": a, **transfer[a]} for a in transfer])
            for key, path in group["plots"].items():
                logged.log_image(f"compare/{slug}/{key}", path)
        logged.log_table("compare/failed", summary["failed"])
        failed = False
    finally:
        run.finish(exit_code=1 if failed else 0)


def finish_any_wandb_run() -> None:
    """Close a W&B run left open (e.g. by Lightning's logger after an exception)."""
    try:
        import wandb

        if wandb.run is not None:
            wandb.finish(exit_code=1)
    except Exception:  # never mask the original error
        pass
