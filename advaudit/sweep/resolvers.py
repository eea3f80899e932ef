"""OmegaConf resolvers the launcher, logger and paths configs use (registered when :mod:`advaudit` is imported)."""

from __future__ import annotations

import os

from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from advaudit.core.wandb_run import run_group


def cores_per_job(n_jobs: int | str | None) -> int:
    """Torch threads for each of ``n_jobs`` parallel jobs so together they use the cores once.

    ``n_jobs <= 0`` or ``None`` (joblib's "all cores") gives one thread per job. The cores are
    those this process may run on (``sched_getaffinity``), not the machine's total.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    jobs = int(n_jobs) if n_jobs not in (None, "") else 0
    if jobs <= 0 or jobs >= cores:
        return 1
    return max(1, cores // jobs)


def wandb_group(task_name: str) -> str:
    """``<task>-<sweep id>`` inside a multirun, else ``<task>`` (the W&B group of a job)."""
    return run_group(task_name)


def launch_dir() -> str:
    """``${launch_dir:}``: the directory the command was started in (Hydra's ``runtime.cwd`` inside a job).

    Unlike ``${hydra:runtime.cwd}`` it also resolves before Hydra has set its config, where a
    multirun's sweeper resolves ``hydra.sweep.dir`` (which ``paths.root_dir`` feeds).
    """
    if HydraConfig.initialized():
        return str(HydraConfig.get().runtime.cwd)
    return os.getcwd()


def register_resolvers() -> None:
    """Register ``${cores_per_job:N}``, ``${wandb_group:<task>}`` and ``${launch_dir:}`` (idempotent)."""
    for name, function in (("cores_per_job", cores_per_job), ("wandb_group", wandb_group), ("launch_dir", launch_dir)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, function)
