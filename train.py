"""Train a target (or generator): ``python train.py dataset=fashion_mnist model=cnn``."""

import hydra
from omegaconf import DictConfig

from advaudit.cli import run_cli, run_task
from advaudit.tasks import train


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    return run_task(train, cfg, cfg.get("optimized_metric"))


if __name__ == "__main__":
    run_cli(main)
