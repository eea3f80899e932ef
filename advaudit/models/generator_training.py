"""Train a class-conditional generator with Lightning and save a self-describing checkpoint.

``python train.py model=generator dataset=fashion_mnist`` (``model.kind: generator``). Writes
``checkpoints/generator.pt``, a per-class sample grid ``samples.png`` and, when
``model.quality_target`` names a classifier trained on the real data, the share of generated
samples it assigns to their conditioning class (``generator/class_agreement``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from advaudit.data.base import ArrayDataModule
from advaudit.errors import require
from advaudit.models.generator import ConditionalGenerator, GANModule, ProjectionCritic
from advaudit.models.io import load_target, save_generator
from advaudit.report.plots import image_grid

log = logging.getLogger(__name__)


@torch.no_grad()
def class_agreement(generator: ConditionalGenerator, classifier: Any, per_class: int = 100, seed: int = 0) -> float:
    """Share of ``per_class`` samples per class that ``classifier`` assigns to the conditioning class."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(generator.num_classes).repeat_interleave(per_class)
    x = generator(generator.sample_latent(len(y), g), y)
    return float((classifier.predict_proba(x).argmax(1) == y).float().mean())


@torch.no_grad()
def sample_grid(generator: ConditionalGenerator, class_names: list[str], path: Path, per_class: int = 8) -> Path:
    """A grid with one row per class (``per_class`` samples each), titled by class."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(generator.num_classes).repeat_interleave(per_class)
    x = generator(generator.sample_latent(len(y), g), y)
    titles = [class_names[int(c)] if i % per_class == 0 else "" for i, c in enumerate(y)]
    return image_grid(x, path, titles, columns=per_class)


def train_generator(cfg: DictConfig) -> dict[str, Any]:
    """Fit the conditional GAN of ``cfg.model`` on ``cfg.dataset``'s training split."""
    datamodule: ArrayDataModule = instantiate(cfg.dataset)
    datamodule.setup()
    shape = tuple(datamodule.input_shape)
    require(len(shape) == 3, f"a generator needs image data; dataset {cfg.dataset._target_} gives rows of shape {list(shape)}")
    params = {"latent_dim": int(cfg.model.latent_dim), "width": int(cfg.model.width)}
    generator = ConditionalGenerator(datamodule.num_classes, shape, **params)
    critic = ProjectionCritic(datamodule.num_classes, shape, width=int(cfg.model.width))
    module = GANModule(generator, critic, lr=float(cfg.model.lr), class_weight=float(cfg.model.class_weight),
                       diversity_weight=float(cfg.model.diversity_weight))
    trainer: pl.Trainer = instantiate(cfg.trainer, logger=False, enable_checkpointing=False)
    trainer.fit(module, train_dataloaders=datamodule.train_dataloader())
    generator = module.generator.cpu().eval()
    out = Path(cfg.paths.output_dir)
    meta = {"class_names": datamodule.class_names, "image_shape": list(shape), **params,
            "dataset": datamodule.describe(), "config": OmegaConf.to_container(cfg, resolve=True)}
    metrics: dict[str, Any] = {"epochs": int(trainer.current_epoch)}
    quality_target = cfg.model.get("quality_target")
    if quality_target:
        classifier = load_target(str(quality_target))
        require(classifier.class_names == datamodule.class_names, "model.quality_target has classes "
                f"{classifier.class_names}, the generator {datamodule.class_names}; pass a classifier of the same data")
        metrics["generator/class_agreement"] = class_agreement(generator, classifier)
        log.info("generated samples assigned to their class: %.3f", metrics["generator/class_agreement"])
    checkpoint = save_generator(generator, meta, out / "checkpoints" / "generator.pt", extra={"metrics": metrics})
    metrics["samples"] = str(sample_grid(generator, datamodule.class_names, out / "samples.png"))
    return {**metrics, "checkpoint": str(checkpoint)}
