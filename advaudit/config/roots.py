"""The root configs (``conf/train.yaml``, ``conf/examine.yaml``) and the blocks no part owns.

A part's own settings (an audit's, an examiner's, a world's, ...) are declared beside the part
(``advaudit/<package>/settings.py``); here are the root keys, ``paths``, ``compare``, the function
blocks (``audit.run``, ``model.train``) and the rules of keys whose blocks another library defines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional

from omegaconf import MISSING

from advaudit.config.ranges import Rule, ranged


class Oracle(str, Enum):
    labels = "labels"
    cli = "cli"


@dataclass
class FunctionConf:
    """A function named by ``_target_`` that the task calls with the run's config: ``audit.run`` (the audit's
    loop, ``run(cfg) -> dict``) and ``model.train`` (the model's training, ``train(cfg) -> dict``)."""

    _target_: str = MISSING
    _partial_: bool = True  # the task supplies cfg


# -- keys of blocks no schema types --------------------------------------------------------------


#: rules of keys whose blocks another library defines (Lightning's Trainer, a torch optimizer) or no
#: schema here types field by field (the generator's settings, PGD training), by dotted key; each
#: holds where its block is given (:func:`advaudit.config.ranges.key_rule_problems`)
KEY_RULES: Dict[str, Rule] = {
    "trainer.max_epochs": Rule(low=1, integer=True, message="{path}={value} trains nothing (it would save an "
                               "untrained model); set {path}>=1 (the nearest valid value is 1)"),
    "trainer.max_steps": Rule(low=-1, integer=True),
    "model.optimizer.lr": Rule(learning_rate=True),
    "model.optimizer.weight_decay": Rule(low=0),
    "model.lr": Rule(learning_rate=True),
    "model.latent_dim": Rule(low=1, integer=True),
    "model.width": Rule(low=1, integer=True),
    "model.adversarial.norm": Rule(choices=("linf", "l2"), required=True, message="{path}={value!r}; use linf or l2"),
    "model.adversarial.eps": Rule(low=0, low_open=True),
    "model.adversarial.steps": Rule(low=1, integer=True),
}


# -- paths ---------------------------------------------------------------------------------------


@dataclass
class PathsConf:
    """``conf/paths/default.yaml``: where a run writes."""

    root_dir: str = MISSING
    log_dir: str = MISSING
    output_dir: str = MISSING
    cache_dir: str = MISSING


# -- comparison ----------------------------------------------------------------------------------


@dataclass
class CompareConf:
    """``compare``: how ``advaudit.compare`` reads this run (recorded in its result.json as ``primary``)."""

    # the metric a comparison answers first (its verdict heads the report and drives --gate); every other
    # metric is evidence for or against it. null: the audit's own headline metric, audit.metric
    # (worst_case: examine/E_T; error_search: search/sdr@20; fault_tests: faults/generator/success)
    primary: Optional[str] = None
    # groups of factors of your own that the comparison's why section sets to their reference together, beside
    # the world's own groups: {light: [brightness, gamma]} (advaudit.compare.why)
    factor_groups: Optional[Dict[str, List[str]]] = None


# -- roots ---------------------------------------------------------------------------------------


@dataclass
class TrainConf:
    """``conf/train.yaml``: root keys typed, groups checked by their own schemas."""

    task_name: str = "train"
    seed: int = 42
    # torch intra-op threads (null = all cores; a launcher sets ADVAUDIT_THREADS per job); BLAS pools are capped at 1
    threads: Optional[int] = ranged(None, low=1, integer=True)
    # host memory freed by a batch: keep (reused by the next batch, no page faults; the process holds its peak
    # until it ends) | release (glibc's default: large blocks go back to the system at once)
    memory: str = ranged("keep", choices=("keep", "release"))
    tags: List[str] = field(default_factory=list)
    optimized_metric: Optional[str] = None
    dataset: Any = None
    model: Any = None
    trainer: Any = None
    logger: Any = None
    callbacks: Any = None
    paths: Any = None


@dataclass
class ExamineConf:
    """``conf/examine.yaml``: root keys typed, groups checked by their own schemas."""

    task_name: str = "examine"
    # the model under audit: a target file (train.py's target.pt, or one written by `advaudit import`), or a
    # block describing a model trained elsewhere ({model: {_target_: ...}, path: weights, class_names: [...],
    # input_shape: [...], normalization: ...}; TorchScript, torch.export, ONNX, skops files need only path:
    # README "Audit a model you already have"); a list sweeps with -m, target=glob:PATTERN / list:FILE too
    target: Any = None
    seed: int = 0
    # fault_tests: the conditional generator (generator.pt written by train.py model=generator)
    generator: Optional[str] = None
    # error_search oracle: labels (ground truth, for experiments) | cli (a person answers in the terminal)
    oracle: Oracle = Oracle.labels
    # torch intra-op threads (null = all cores; a launcher sets ADVAUDIT_THREADS per job); BLAS pools are capped at 1
    threads: Optional[int] = ranged(None, low=1, integer=True)
    # host memory freed by a batch: keep (reused by the next batch, no page faults; the process holds its peak
    # until it ends) | release (glibc's default: large blocks go back to the system at once)
    memory: str = ranged("keep", choices=("keep", "release"))
    # auto (a CUDA GPU when torch sees one, else the CPU) | cpu | cuda | cuda:N
    device: str = "auto"
    # the target's inference: 32 (float32) | bf16 (bfloat16 autocast) | 16 (float16 autocast, CUDA only)
    precision: str = ranged("32", choices=("32", "bf16", "16"))
    tags: List[str] = field(default_factory=list)
    optimized_metric: Optional[str] = None
    audit: Any = None
    world: Any = None
    examiner: Any = None
    search: Any = None
    logger: Any = None
    paths: Any = None
    compare: CompareConf = field(default_factory=CompareConf)
