"""W&B runs for a team, that never need a network: offline by default, ``disabled`` honoured.

Mode comes from ``cfg.logger.wandb.mode`` (which defaults to ``${oc.env:WANDB_MODE,offline}``) so
one job of a multirun never leaks its mode into the next (unlike ``WandbLogger(offline=True)``).

Every run, training runs (Lightning's ``WandbLogger``, completed by
:func:`advaudit.models.targets.tracking.track_training_run` and :func:`~advaudit.models.targets.tracking.finish_training_run`)
as well as audits (:func:`advaudit.models.targets.tracking.open_wandb`), is set up so a team can compare runs
in W&B's run table:

- ``group`` = the multirun's id (``<task>-<sweep folder>``; the task name for a single run), so a
  sweep's jobs sit together; ``job_type`` = the audit's name (``audit.name``);
- ``tags`` from the config (``tags``, the audit, the examiner or search method, the seed);
- the RESOLVED config (no ``${seed}``-style strings), and the headline numbers in the summary;
- lineage: a training run logs its checkpoint as an output and every audit declares the checkpoint
  under audit (and the generator, for fault tests) an input, as a W&B model Artifact carrying its
  metadata (architecture, classes, input shape, dataset, training metrics), so W&B links every
  audit of a checkpoint to the run that trained it (:mod:`advaudit.models.targets.tracking`, which reads
  the checkpoints; this module never does).

Offline runs keep all of this in ``<run dir>/wandb/offline-run-*`` and ``wandb sync`` uploads it
later; :mod:`advaudit.report.wandb_offline` reads those files back.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Mapping

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.config.audit_card import card_of


def sweep_id() -> str | None:
    """``<sweep folder name>`` when running inside a Hydra multirun, else None."""
    try:
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
    """``base`` tags plus the audit, its method (the config value at its card's ``method`` key: the examiner or
    search method), the model and the seed."""
    audit = OmegaConf.select(cfg, "audit.name", default=None)
    card = card_of(audit)   # filed when the audit's settings were defined (the run's config was composed from them)
    method_key = card.method if card is not None else None
    values = [audit, OmegaConf.select(cfg, method_key, default=None) if method_key else None,
              OmegaConf.select(cfg, "model.name", default=None)]
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


class NullRun:
    """Stands in for a W&B run when W&B is disabled."""

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        pass

    def log_image(self, key: str, path: str | Path) -> None:
        pass

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        pass

    def set_summary(self, data: Mapping[str, Any]) -> None:
        pass


class LoggedRun(NullRun):
    """A W&B run behind :class:`NullRun`'s four methods."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        self.run.log(data, step=step)
        self.set_summary({k: v for k, v in data.items() if "/" in k})

    def log_image(self, key: str, path: str | Path) -> None:
        import wandb  # W&B is imported only by a run that logs (it is slow to import)

        self.run.log({key: wandb.Image(str(path))})

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        import wandb  # W&B is imported only by a run that logs (it is slow to import)

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


def finish_any_wandb_run() -> None:
    """Close a W&B run left open (e.g. by Lightning's logger after an exception)."""
    wandb = sys.modules.get("wandb")  # a run some code opened imported W&B; else there is none to close (~1 s saved)
    try:
        if wandb is not None and wandb.run is not None:
            wandb.finish(exit_code=1)
    except Exception:  # never mask the original error
        pass
