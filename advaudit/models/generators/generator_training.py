"""Train a class-conditional generator with Lightning, gate its quality and save a self-describing checkpoint.

``python train.py model=generator dataset=fashion_mnist`` (``model.train`` names :func:`train_generator`); any image
dataset works, grey or RGB (``dataset=shapes`` renders ShapeWorld: ``experiment=faults/train_shapes_generator``).
Writes ``checkpoints/generator.pt`` and a per-class sample grid ``samples.png``. The training state is
saved after every epoch (``checkpoints/resume.ckpt``): a run stopped by SIGINT/SIGTERM resumes from its
last finished epoch when rerun into the same run dir.

**Quality gate.** ``model.quality_target`` names a classifier trained on the *real* data; the share of
generated samples (100 per class) it assigns to their conditioning class is the generator's class
agreement (``generator/class_agreement``, per class in ``generator/class_agreement_by_class``), next to
the same classifier's accuracy on the dataset's real test images (``generator/classifier_real_acc``,
the ceiling a perfect generator would reach). With ``model.quality_gate`` set, a generator below it is
refused: it is saved as ``checkpoints/generator_below_gate.pt`` (never ``generator.pt``) and training
ends with an error. The record goes into the checkpoint's meta (``quality``), and the fault-test audit
refuses a generator whose record says it failed its gate.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader

from advaudit.core.plots import image_grid
from advaudit.errors import AdvauditError, require
from advaudit.models.training.classifier_training import EpochCheckpoint, resume_checkpoint, saved_epochs
from advaudit.models.training.datamodule import TrainingData
from advaudit.models.generators.generator import ConditionalGenerator, GANModule, ProjectionCritic, architecture, save_generator
from advaudit.models.targets.io import load_target
from advaudit.models.generators.rendered_generator import RenderedGeneratorModule, RenderedScenes, rendered_scenes_loader

log = logging.getLogger(__name__)

# generated samples per class behind the class agreement (1,000 for 10 classes)
GATE_SAMPLES_PER_CLASS = 100


@torch.no_grad()
def class_agreement_by_class(generator: ConditionalGenerator, classifier: Any, per_class: int = GATE_SAMPLES_PER_CLASS,
                             seed: int = 0) -> torch.Tensor:
    """``[K]``: share of ``per_class`` samples of each class that ``classifier`` assigns to that class."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(generator.num_classes).repeat_interleave(per_class)
    x = generator(generator.sample_latent(len(y), g), y)
    hits = (classifier.predict_proba(x).argmax(1).cpu() == y).float()
    return hits.view(generator.num_classes, per_class).mean(1)


def class_agreement(generator: ConditionalGenerator, classifier: Any, per_class: int = GATE_SAMPLES_PER_CLASS,
                    seed: int = 0) -> float:
    """Share of ``per_class`` samples per class that ``classifier`` assigns to the conditioning class."""
    return float(class_agreement_by_class(generator, classifier, per_class, seed).mean())


@torch.no_grad()
def sample_grid(generator: ConditionalGenerator, class_names: list[str], path: Path, per_class: int = 8) -> Path:
    """A grid with one row per class (``per_class`` samples each), titled by class."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(generator.num_classes).repeat_interleave(per_class)
    x = generator(generator.sample_latent(len(y), g), y)
    titles = [class_names[int(c)] if i % per_class == 0 else "" for i, c in enumerate(y)]
    return image_grid(x, path, titles, columns=per_class)


def quality_record(generator: ConditionalGenerator, classifier: Any, classifier_path: str, gate: float | None,
                   datamodule: TrainingData) -> dict[str, Any]:
    """The gate's measurement: class agreement of generated samples (overall and per class), the
    classifier's accuracy on the dataset's real test images, the gate and whether it passed."""
    by_class = class_agreement_by_class(generator, classifier)
    test = datamodule.split("test")
    agreement = float(by_class.mean())
    return {"classifier": classifier_path, "class_agreement": agreement,
            "class_agreement_by_class": dict(zip(datamodule.class_names, by_class.tolist())),
            "samples_per_class": GATE_SAMPLES_PER_CLASS,
            "classifier_real_acc": float((classifier.predict_proba(test.x).argmax(1).cpu() == test.y).float().mean()),
            "gate": gate,
            "passed": None if gate is None else agreement >= gate}


def _gate_classifier(cfg: DictConfig, class_names: list[str], shape: tuple[int, ...]) -> tuple[Any, float | None]:
    """The quality classifier (or None) and the gate, checked before any training is spent."""
    path, gate = cfg.model.get("quality_target"), cfg.model.get("quality_gate")
    require(gate is None or 0.0 < float(gate) <= 1.0, f"model.quality_gate={gate} must be a share in (0, 1] "
            "(the least share of generated samples the quality classifier must assign to their class)")
    require(gate is None or bool(path), f"model.quality_gate={gate} needs model.quality_target=<target.pt of a "
            "classifier trained on the real data> to measure the class agreement against (or model.quality_gate=null)")
    if not path:
        return None, None
    return _classifier_of_the_data("model.quality_target", str(path), class_names, shape), \
        None if gate is None else float(gate)


def _class_teacher(cfg: DictConfig, class_names: list[str], shape: tuple[int, ...]) -> Any:
    """The frozen classifier of ``model.class_teacher`` (None when unset), checked against the data; it
    must not be the gate's classifier (a generator taught by the gate would pass it by construction)."""
    path = cfg.model.get("class_teacher")
    if not path:
        return None
    require(str(path) != str(cfg.model.get("quality_target")), f"model.class_teacher and model.quality_target are "
            f"both {path}: the gate must be judged by a classifier the generator was not taught by; pass another")
    return _classifier_of_the_data("model.class_teacher", str(path), class_names, shape, channels_last=False)


def _classifier_of_the_data(key: str, path: str, class_names: list[str], shape: tuple[int, ...],
                            **load_options: Any) -> Any:
    """Load the classifier that config ``key`` names and require that it takes the generator's data:
    the same classes and images of ``shape``."""
    classifier = load_target(path, **load_options)
    require(classifier.class_names == class_names, f"{key} has classes {classifier.class_names}, "
            f"the generator {class_names}; pass a classifier of the same data")
    require(tuple(classifier.input_shape) == tuple(shape), f"{key} takes images of shape "
            f"{list(classifier.input_shape)}, the generator makes {list(shape)}; pass a classifier trained at that size")
    return classifier


def _adversarial(cfg: DictConfig, datamodule: TrainingData,
                 generator: ConditionalGenerator) -> tuple[pl.LightningModule, DataLoader]:
    """The conditional GAN (critic, optional frozen class teacher) on the dataset's training images."""
    shape = tuple(datamodule.input_shape)
    critic = ProjectionCritic(datamodule.num_classes, shape, width=int(cfg.model.width))
    module = GANModule(generator, critic, lr=float(cfg.model.lr), class_weight=float(cfg.model.class_weight),
                       diversity_weight=float(cfg.model.diversity_weight),
                       teacher=_class_teacher(cfg, datamodule.class_names, shape),
                       teacher_weight=float(cfg.model.get("teacher_weight", 1.0)))
    return module, datamodule.train_dataloader()


def _rendered(cfg: DictConfig, datamodule: TrainingData,
              generator: ConditionalGenerator) -> tuple[pl.LightningModule, DataLoader]:
    """The generator fitted to the world's renders of the scenes its latents name
    (:mod:`advaudit.models.generators.rendered_generator`); the dataset supplies the world and its training box."""
    require(not cfg.model.get("class_teacher"), "model.class_teacher steers the adversarial objective; the "
            "rendered objective is taught by the world's renderer: drop model.class_teacher")
    world = getattr(datamodule, "world", None)
    require(world is not None, f"model.objective=rendered needs a rendered dataset (dataset=shapes); "
            f"{cfg.dataset._target_} has no world")
    scenes = RenderedScenes(world, datamodule.train_factors, generator.latent_dim, int(cfg.dataset.batch_size),
                            int(cfg.model.get("steps_per_epoch", 200)), int(cfg.seed))
    module = RenderedGeneratorModule(generator, lr=float(cfg.model.lr),
                                     object_weight=float(cfg.model.get("object_weight", 4.0)))
    return module, rendered_scenes_loader(scenes)


# how a generator learns: from a critic on the dataset's images, or from the world's renderer
OBJECTIVES = {"adversarial": _adversarial, "rendered": _rendered}


def train_generator(cfg: DictConfig) -> dict[str, Any]:
    """Fit the conditional GAN of ``cfg.model`` on ``cfg.dataset``'s training split, gate it and save it."""
    datamodule: TrainingData = instantiate(cfg.dataset)
    datamodule.setup()
    shape = tuple(datamodule.input_shape)
    require(len(shape) == 3, f"a generator needs image data; dataset {cfg.dataset._target_} gives rows of shape {list(shape)}")
    require(shape[1] == shape[2] and shape[1] % 4 == 0, f"the generator makes square images whose side is a multiple "
            f"of 4; dataset {cfg.dataset._target_} gives {list(shape)} (resize the data, e.g. dataset.image_size=32)")
    classifier, gate = _gate_classifier(cfg, datamodule.class_names, shape)
    objective = str(cfg.model.get("objective", "adversarial"))
    require(objective in OBJECTIVES, f"model.objective={objective!r}; use one of {list(OBJECTIVES)}")
    params = architecture(cfg.model)
    generator = ConditionalGenerator(datamodule.num_classes, shape, **params)
    module, loader = OBJECTIVES[objective](cfg, datamodule, generator)
    out = Path(cfg.paths.output_dir)
    resume = resume_checkpoint(out)
    trainer: pl.Trainer = instantiate(cfg.trainer, logger=False, enable_checkpointing=False,
                                      callbacks=[EpochCheckpoint(resume)])
    resumed_from = saved_epochs(resume)
    if resumed_from is not None:
        log.info("resuming generator training from %s (%d epoch(s) done)", resume, resumed_from)
    trainer.fit(module, train_dataloaders=loader,
                ckpt_path=resume if resumed_from is not None else None, weights_only=True)
    generator = module.generator.cpu().eval()
    meta = {"class_names": datamodule.class_names, "image_shape": list(shape), **params, "objective": objective,
            "dataset": datamodule.describe(), "config": OmegaConf.to_container(cfg, resolve=True)}
    metrics: dict[str, Any] = {"epochs": int(trainer.current_epoch), "resumed_from_epoch": resumed_from or 0}
    if classifier is not None:
        meta["quality"] = quality_record(generator, classifier, str(cfg.model.quality_target), gate, datamodule)
        metrics.update({f"generator/{key}": meta["quality"][key]
                        for key in ("class_agreement", "class_agreement_by_class", "classifier_real_acc")})
        log.info("generated samples assigned to their class: %.3f (the classifier on real test images: %.3f)",
                 meta["quality"]["class_agreement"], meta["quality"]["classifier_real_acc"])
    metrics["samples"] = str(sample_grid(generator, datamodule.class_names, out / "samples.png"))
    passed = meta.get("quality", {}).get("passed") is not False
    name = "generator.pt" if passed else "generator_below_gate.pt"
    checkpoint = save_generator(generator, meta, out / "checkpoints" / name, extra={"metrics": metrics})
    if not passed:
        quality = meta["quality"]
        raise AdvauditError(f"the generator failed its quality gate: the classifier {quality['classifier']} assigns "
                            f"{quality['class_agreement']:.3f} of its samples to their class, below "
                            f"model.quality_gate={gate} (it gets {quality['classifier_real_acc']:.3f} of real test "
                            f"images right); saved as {checkpoint} for inspection (samples: {metrics['samples']}). "
                            "Train longer: rerun with a larger trainer.max_epochs into the same run dir (it resumes "
                            "from checkpoints/resume.ckpt)")
    return {**metrics, "checkpoint": str(checkpoint)}


def require_gate_passed(meta: dict[str, Any], path: str) -> None:
    """Refuse a generator whose checkpoint records a failed quality gate."""
    quality = meta.get("quality") or {}
    require(quality.get("passed") is not False, f"the generator {path} failed its quality gate (class agreement "
            f"{quality.get('class_agreement')} < gate {quality.get('gate')}); train one that passes "
            "(train.py model=generator ... model.quality_target=<classifier> model.quality_gate=<share>)")
