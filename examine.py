"""Audit a target: ``python examine.py audit=worst_case world=shapes examiner=bo target=<ckpt>``."""

import sys

import hydra
from omegaconf import DictConfig

from advaudit.cli import run_cli, run_task
from advaudit.sweep.targets import main_argv
from advaudit.tasks import examine


@hydra.main(version_base="1.3", config_path="conf", config_name="examine")
def main(cfg: DictConfig) -> float | None:
    return run_task(examine, cfg, cfg.get("optimized_metric"))


if __name__ == "__main__":
    sys.argv = main_argv(sys.argv)  # target=glob:PATTERN / target=list:FILE -> a sweep over checkpoints
    run_cli(main)
