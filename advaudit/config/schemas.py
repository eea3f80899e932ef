"""Structured-config schemas: the type and the allowed choices of every key advaudit reads.

Each YAML option of the groups advaudit owns (``audit``, ``examiner``, ``world``, ``search``,
``dataset``, ``model``, ``paths``) and the two root configs start with ``defaults: [<schema>, _self_]``, so Hydra checks
every value at composition time, with its own messages, before any work: ``seed=abc`` ("Value 'abc'
of type 'str' could not be converted to Integer"), ``audit.mode=weak`` ("Invalid value 'weak',
expected one of [weakness, strength]"), ``+audit.bugdet=8`` (not in the schema). The YAML files
keep their values and comments; defaults here only matter for keys a YAML file leaves out.

Rules that relate several keys (``low <= high``, report budgets within the budget, ...) live in
:mod:`advaudit.config.validation`, which runs once before a task starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from omegaconf import MISSING


class Split(str, Enum):
    train = "train"
    val = "val"
    test = "test"


class Mode(str, Enum):
    weakness = "weakness"
    strength = "strength"


class Selection(str, Enum):
    stratified = "stratified"
    best_per_class = "best_per_class"
    random = "random"


class BudgetUnit(str, Enum):
    queries = "queries"
    iterations = "iterations"


class FaultBudget(str, Enum):
    fixed = "fixed"
    annealed = "annealed"


class PixelEngine(str, Enum):
    foolbox = "foolbox"
    advaudit = "advaudit"


class RLBaseline(str, Enum):
    ema = "ema"
    batch_mean = "batch_mean"
    none = "none"


class AttackMethod(str, Enum):
    hsj = "hsj"
    boundary = "boundary"
    hop_skip_jump = "hop_skip_jump"


class Design(str, Enum):
    lhs = "lhs"
    pool = "pool"
    neighbourhood = "neighbourhood"


class PaddingMode(str, Enum):
    zeros = "zeros"
    border = "border"
    reflection = "reflection"


class Oracle(str, Enum):
    labels = "labels"
    cli = "cli"


# -- audit --------------------------------------------------------------------------------------
@dataclass
class ValidityConf:
    in_frame: bool = True
    min_height_px: float = 6
    min_content_kept: float = 0.8
    reference: Optional[str] = None
    reference_min_prob: float = 0.5


@dataclass
class WorstCaseAuditConf:
    name: str = "worst_case"
    run: str = "advaudit.audits.worst_case.run"
    metric: Optional[str] = "examine/E_T"
    budget: int = 500
    budget_unit: BudgetUnit = BudgetUnit.queries
    report_budgets: List[int] = field(default_factory=lambda: [0, 100, 300, 500])
    mode: Mode = Mode.weakness
    selection: Selection = Selection.stratified
    selection_split: Split = Split.val
    selection_renders: int = 10
    n_instances: Optional[int] = None
    fixed_random: List[str] = field(default_factory=list)
    calibrated: bool = False
    factor_share: Any = None  # null or a mapping (checked in validation)
    validity: ValidityConf = field(default_factory=ValidityConf)
    judge: Optional[str] = None  # an independent target.pt that only measures the worst cases (never selects)
    checkpoint_every: int = 10
    stop_after_steps: Optional[int] = None


@dataclass
class SearchFeaturesConf:
    components: int = 20


@dataclass
class ErrorSearchAuditConf:
    name: str = "error_search"
    run: str = "advaudit.audits.error_search.run"
    split: Split = Split.test
    dataset: Any = None
    critical_class: Any = 0
    tau: float = 0.65
    box: Any = "auto"  # auto | observed | [low, high]
    pool_size: int = 2000
    replications: int = 1000
    budget: int = 50
    pool_chunk: int = 100
    features: SearchFeaturesConf = field(default_factory=SearchFeaturesConf)
    compare: List[str] = field(default_factory=list)
    report_at: List[int] = field(default_factory=list)
    metric: Optional[str] = None
    clamp_pool_size: bool = False


@dataclass
class FaultTestsAuditConf:
    name: str = "fault_tests"
    run: str = "advaudit.audits.fault_tests.run"
    source_class: Any = 0
    target_class: Any = 1
    n_seeds: int = 200
    k: int = 2
    eps: float = 4.0
    budget: FaultBudget = FaultBudget.fixed
    kappa: float = 1.0
    lr: float = 0.003
    max_steps: int = 400
    chunk: int = 200
    pixel_engine: PixelEngine = PixelEngine.foolbox
    pixel: Dict[str, Any] = field(default_factory=dict)
    transfer_targets: List[str] = field(default_factory=list)
    metric: Optional[str] = None
    fault_feature: Any = None  # null, {kind, direction} or a list of them (checked in validation)
    judge: Optional[str] = None
    both_directions: bool = False


@dataclass
class GalleryAuditConf:
    name: str = "gallery"
    run: str = "advaudit.audits.gallery.run"
    split: Split = Split.test
    n_instances: int = 3
    steps: int = 7
    base: float = 0.5
    base_overrides: Any = None  # null or {factor: unit-cube value}


@dataclass
class EvaluateAuditConf:
    name: str = "evaluate"
    run: str = "advaudit.audits.evaluate.run"
    metric: Optional[str] = None
    split: Split = Split.test
    dataset: Any = None


# -- examiner -----------------------------------------------------------------------------------
@dataclass
class RandomExaminerConf:
    name: str = "random"
    q: int = 32


@dataclass
class OptunaExaminerConf:
    name: str = "tpe"
    q: int = 1


@dataclass
class BOExaminerConf:
    name: str = "bo"
    q: int = 1
    beta: float = 6.635776
    n_init: int = 2
    refit_every: int = 10
    refit_growth: float = 1.3
    fit_maxiter: int = 40
    fit_max_points: int = 128
    raw_samples: int = 256
    restarts: int = 4
    adam_steps: int = 15
    adam_lr: float = 0.03
    acquisition_dtype: str = "float32"  # float32 | float64: the variance product L^-1 k (issue 15)
    refine: str = "local"  # local | adam (issue 15)
    local_scales: List[float] = field(default_factory=lambda: [0.4, 0.15, 0.05, 0.02])
    local_samples: int = 24


@dataclass
class RLExaminerConf:
    name: str = "rl"
    q: int = 32
    bins: int = 100
    embedding: int = 30
    hidden: int = 30
    lr: float = 0.001
    baseline_decay: float = 0.9
    baseline: RLBaseline = RLBaseline.ema
    order: Optional[List[int]] = None


# -- world --------------------------------------------------------------------------------------
@dataclass
class ShapesWorldConf:
    _target_: str = "advaudit.worlds.shapes.ShapeWorld"
    image_size: int = 32
    instances_per_class: Dict[str, int] = field(default_factory=lambda: {"train": 40, "val": 10, "test": 10})
    seed: int = 0
    factors: Any = None  # null or a mapping (checked in validation)
    classes: Optional[List[str]] = None
    shadows: bool = True
    device: str = "auto"


@dataclass
class TransformsWorldConf:
    _target_: str = "advaudit.worlds.transforms.TransformWorld"
    dataset: Any = None
    factors: Any = None  # null or a mapping (checked in validation)
    padding_mode: PaddingMode = PaddingMode.zeros
    device: str = "auto"


@dataclass
class MeshWorldConf:
    """``conf/world/meshes.yaml`` (MeshWorld, Mitsuba 3); wire with ``defaults: [meshes_schema, _self_]``."""

    _target_: str = "advaudit.worlds.meshes.MeshWorld"
    root: str = "builtin"
    layout: str = "auto"
    classes: Optional[List[str]] = None
    split_fractions: Dict[str, float] = field(default_factory=lambda: {"train": 0.7, "val": 0.1, "test": 0.2})
    instances_per_class: Any = None
    builtin_instances: Dict[str, int] = field(default_factory=lambda: {"train": 40, "val": 10, "test": 10})
    seed: int = 0
    up_axis: str = "auto"
    image_size: int = 32
    spp: int = 16
    max_depth: int = 3
    object_radius: float = 0.6
    ambient: float = 0.15
    exposure: float = 1.0
    ground: bool = True
    batch_cameras: bool = False
    factors: Any = None  # null or a mapping (checked in validation)
    cache_dir: Optional[str] = None
    device: str = "auto"
    threads: Optional[int] = None


# -- search -------------------------------------------------------------------------------------
@dataclass
class LowessConf:
    frac: float = 0.1
    it: int = 3
    delta: float = 0.0
    log: bool = True
    per_pool: bool = True


@dataclass
class DecisionAttackConf:
    method: AttackMethod = AttackMethod.hsj
    steps: int = 6  # the default of conf/search/methods.yaml (issue 15: rank rho 0.90 vs converged)
    gradient_queries: int = 16
    max_gradient_queries: int = 32
    binary_steps: int = 8
    chunk: int = 500
    seed: int = 0
    params: Dict[str, Any] = field(default_factory=dict)
    probe_resolution: Optional[int] = None  # hsj: gradient probes on an r x r grid, upsampled (issue 15)


@dataclass
class AdversarialDistanceConf:
    attack: DecisionAttackConf = field(default_factory=DecisionAttackConf)
    lowess: LowessConf = field(default_factory=LowessConf)


@dataclass
class PseudoModelConf:
    design: Design = Design.lhs
    jitter: float = 0.1
    design_size: int = 50000
    hidden: List[int] = field(default_factory=lambda: [128, 128, 64, 32])
    epochs: int = 20
    lr: float = 0.001
    batch_size: int = 256
    seed: int = 0


@dataclass
class GADAttackConf:
    step: float = 0.01
    max_steps: int = 500
    chunk: int = 100000


@dataclass
class GADConf:
    pseudo_model: PseudoModelConf = field(default_factory=PseudoModelConf)
    attack: GADAttackConf = field(default_factory=GADAttackConf)
    lowess: LowessConf = field(default_factory=LowessConf)


@dataclass
class SearchConf:
    name: str = "adversarial_distance"
    adversarial_distance: AdversarialDistanceConf = field(default_factory=AdversarialDistanceConf)
    gad: GADConf = field(default_factory=GADConf)
    random: Dict[str, Any] = field(default_factory=dict)
    low_confidence: Dict[str, Any] = field(default_factory=dict)
    # the adaptive policies' parameters are passed to their constructors, which name unknown ones
    lakkaraju: Dict[str, Any] = field(default_factory=dict)
    bansal_weld: Dict[str, Any] = field(default_factory=dict)
    facility_locations: Dict[str, Any] = field(default_factory=dict)


# -- dataset ------------------------------------------------------------------------------------
@dataclass
class DatasetConf:
    """Keys every :class:`advaudit.data.base.ArrayDataModule` takes."""

    _target_: str = MISSING
    batch_size: int = 128
    val_fraction: float = 0.1
    seed: int = 0
    limit: Any = None  # null or {split: cap} (checked in validation)
    classes: Optional[List[Any]] = None
    bias: Dict[str, Any] = field(default_factory=dict)
    num_workers: int = 0


@dataclass
class FashionMNISTDatasetConf(DatasetConf):
    _target_: str = "advaudit.data.fashion_mnist.FashionMNISTDataModule"
    root: str = "/usr/share/datasets/fashion-mnist"


@dataclass
class DigitsDatasetConf(DatasetConf):
    _target_: str = "advaudit.data.sklearn_sets.DigitsDataModule"
    test_fraction: float = 0.25


@dataclass
class TabularDatasetConf(DatasetConf):
    _target_: str = "advaudit.data.sklearn_sets.TabularDataModule"
    name: str = "breast_cancer"
    path: Optional[str] = None
    label_column: str = "label"
    test_fraction: float = 0.25


@dataclass
class ImageFolderDatasetConf(DatasetConf):
    _target_: str = "advaudit.data.folders.ImageFolderDataModule"
    root: str = MISSING
    image_size: int = 32
    channels: int = 3
    test_fraction: float = 0.2
    strict: bool = False


@dataclass
class TorchvisionDatasetConf(DatasetConf):
    _target_: str = "advaudit.data.folders.TorchvisionDataModule"
    name: str = MISSING
    root: str = MISSING
    image_size: int = 32
    channels: int = 3


@dataclass
class ShapesDatasetConf(DatasetConf):
    _target_: str = "advaudit.data.shapes.ShapesDataModule"
    m: int = 10
    m_eval: int = 10
    fresh: bool = False  # new random training conditions every epoch (issue 11)
    image_size: int = 32
    instances_per_class: Dict[str, int] = field(default_factory=lambda: {"train": 40, "val": 10, "test": 10})
    world_seed: int = 0
    shadows: bool = True
    factors: Any = None  # null or a mapping (checked in validation)
    eval_factors: Any = None  # null or a mapping (checked in validation)
    cache_dir: Optional[str] = None
    val_fraction: float = 0.0


@dataclass
class MeshesDatasetConf(DatasetConf):
    """``conf/dataset/meshes.yaml``; ``world`` takes MeshWorld's keys but ``image_size``."""

    _target_: str = "advaudit.data.meshes.MeshesDataModule"
    m: int = 10
    m_eval: int = 10
    fresh: bool = False
    image_size: int = 32
    world: Dict[str, Any] = field(default_factory=dict)
    factors: Any = None  # null or a mapping (checked in validation)
    eval_factors: Any = None  # null or a mapping (checked in validation)
    cache_dir: Optional[str] = None
    val_fraction: float = 0.0


# -- model ---------------------------------------------------------------------------------------
@dataclass
class ClassifierModelConf:
    """``conf/model/{cnn,mlp,alexnet,resnet18,resnet34}.yaml``: a torch classifier trained by train.py."""

    kind: str = "classifier"
    arch: str = MISSING
    arch_params: Dict[str, Any] = field(default_factory=dict)  # the architecture's own keyword arguments
    optimizer: Any = None  # a _target_ block (_partial_: true), given the parameters at the call site
    adversarial: Any = None  # null or PGD settings {norm, eps, steps, step_size} (checked in validation)


@dataclass
class SklearnModelConf:
    """``conf/model/{svm,logreg}.yaml``: a scikit-learn black box grid-searched on a table."""

    kind: str = "sklearn"
    estimator: str = MISSING
    params: Dict[str, Any] = field(default_factory=dict)
    grid: Dict[str, Any] = field(default_factory=dict)


@dataclass
class GeneratorModelConf:
    """``conf/model/generator.yaml``: the conditional generator of the fault tests."""

    kind: str = "generator"
    objective: str = "adversarial"
    latent_dim: int = 64
    width: int = 32
    trunk_layers: int = 0
    trunk_width: int = 512
    lr: float = 0.0002
    steps_per_epoch: int = 200
    object_weight: float = 4.0
    class_weight: float = 1.0
    diversity_weight: float = 1.0
    quality_target: Optional[str] = None
    quality_gate: Optional[float] = None
    class_teacher: Optional[str] = None
    teacher_weight: float = 1.0


# -- paths ---------------------------------------------------------------------------------------
@dataclass
class PathsConf:
    """``conf/paths/default.yaml``: where a run writes."""

    root_dir: str = MISSING
    log_dir: str = MISSING
    output_dir: str = MISSING
    cache_dir: str = MISSING


# -- roots --------------------------------------------------------------------------------------
@dataclass
class TrainConf:
    """``conf/train.yaml``: root keys typed, groups checked by their own schemas."""

    task_name: str = "train"
    seed: int = 42
    threads: Optional[int] = None
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
    target: Any = None
    seed: int = 0
    generator: Optional[str] = None
    oracle: Oracle = Oracle.labels
    threads: Optional[int] = None
    device: str = "auto"
    tags: List[str] = field(default_factory=list)
    optimized_metric: Optional[str] = None
    audit: Any = None
    world: Any = None
    examiner: Any = None
    search: Any = None
    logger: Any = None
    paths: Any = None


#: (group, schema name, dataclass); ``group=None`` for the root configs.
SCHEMAS: list[tuple[str | None, str, type]] = [
    (None, "train_schema", TrainConf),
    (None, "examine_schema", ExamineConf),
    ("audit", "worst_case_schema", WorstCaseAuditConf),
    ("audit", "error_search_schema", ErrorSearchAuditConf),
    ("audit", "fault_tests_schema", FaultTestsAuditConf),
    ("audit", "gallery_schema", GalleryAuditConf),
    ("audit", "evaluate_schema", EvaluateAuditConf),
    ("examiner", "random_schema", RandomExaminerConf),
    ("examiner", "optuna_schema", OptunaExaminerConf),
    ("examiner", "bo_schema", BOExaminerConf),
    ("examiner", "rl_schema", RLExaminerConf),
    ("world", "shapes_schema", ShapesWorldConf),
    ("world", "transforms_schema", TransformsWorldConf),
    ("world", "meshes_schema", MeshWorldConf),
    ("search", "search_schema", SearchConf),
    ("dataset", "fashion_mnist_schema", FashionMNISTDatasetConf),
    ("dataset", "digits_schema", DigitsDatasetConf),
    ("dataset", "tabular_schema", TabularDatasetConf),
    ("dataset", "image_folder_schema", ImageFolderDatasetConf),
    ("dataset", "torchvision_schema", TorchvisionDatasetConf),
    ("dataset", "shapes_schema", ShapesDatasetConf),
    ("dataset", "meshes_schema", MeshesDatasetConf),
    ("model", "classifier_schema", ClassifierModelConf),
    ("model", "sklearn_schema", SklearnModelConf),
    ("model", "generator_schema", GeneratorModelConf),
    ("paths", "paths_schema", PathsConf),
]
