"""W&B runs that never need a network: offline by default, ``disabled`` honoured, always finished.

Mode comes from ``cfg.logger.wandb.mode`` (which defaults to ``${oc.env:WANDB_MODE,offline}``) so
one job of a multirun never leaks its mode into the next (unlike ``WandbLogger(offline=True)``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from omegaconf import DictConfig, OmegaConf


def wandb_settings(cfg: DictConfig) -> dict[str, Any]:
    """The W&B options of ``cfg.logger.wandb`` (with defaults when the logger group is absent)."""
    logger = OmegaConf.select(cfg, "logger.wandb", default=None)
    options = OmegaConf.to_container(logger, resolve=True) if logger is not None else {}
    mode = options.get("mode") or os.environ.get("WANDB_MODE", "offline")
    if logger is None and OmegaConf.select(cfg, "logger", default=None) is not None:
        mode = "disabled"  # a logger group without wandb (logger=none / csv) means: no W&B
    return {"project": options.get("project", "advaudit"), "mode": mode,
            "group": options.get("group") or None, "tags": list(options.get("tags") or [])}


class _NullRun:
    """Stands in for a W&B run when W&B is disabled."""

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        pass

    def log_image(self, key: str, path: str | Path) -> None:
        pass

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        pass


class _Run(_NullRun):
    def __init__(self, run: Any) -> None:
        self.run = run

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        self.run.log(data, step=step)

    def log_image(self, key: str, path: str | Path) -> None:
        import wandb

        self.run.log({key: wandb.Image(str(path))})

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        import wandb

        if rows:
            columns = list(rows[0])
            self.run.log({key: wandb.Table(columns=columns, data=[[r.get(c) for c in columns] for r in rows])})


@contextmanager
def open_wandb(cfg: DictConfig, job_type: str, name: str | None = None) -> Iterator[_NullRun]:
    """Open a W&B run for ``cfg`` under ``cfg.paths.output_dir``; always finished on exit."""
    settings = wandb_settings(cfg)
    if settings["mode"] == "disabled":
        yield _NullRun()
        return
    import wandb

    output_dir = Path(OmegaConf.select(cfg, "paths.output_dir", default=".") or ".")
    output_dir.mkdir(parents=True, exist_ok=True)
    run = wandb.init(project=settings["project"], mode=settings["mode"], group=settings["group"],
                     tags=settings["tags"], job_type=job_type, name=name, dir=str(output_dir),
                     config=OmegaConf.to_container(cfg, resolve=False), reinit="finish_previous")
    failed = True
    try:
        yield _Run(run)
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
