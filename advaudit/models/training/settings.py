"""The models' training settings (``conf/model/<name>.yaml`` names its dataclass here)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Optional

from omegaconf import MISSING, DictConfig

from advaudit.errors import unknown_keys_message

from advaudit.config.part import Part
from advaudit.config.validation import Context, get
from advaudit.config.roots import FunctionConf


#: the settings of PGD adversarial training (``model.adversarial``: advaudit.models.training.classifier.pgd_attack)
PGD_KEYS = ("norm", "eps", "steps", "step_size", "random_start")


@dataclass
class ClassifierModelConf(Part):
    """``conf/model/{cnn,mlp,alexnet,resnet18,resnet34}.yaml``: a torch classifier trained by train.py."""

    config_group: ClassVar[str] = "model"
    schema_name: ClassVar[Optional[str]] = "classifier_schema"

    name: Optional[str] = None  # the label of tables and W&B tags
    # the net: {_target_: <class or builder>, _partial_: true, <its own keyword arguments>}; training supplies
    # input_shape and num_classes (advaudit.models.nets)
    arch: Any = MISSING
    train: FunctionConf = field(default_factory=lambda: FunctionConf(
        "advaudit.models.classifier_training.train_classifier"))
    optimizer: Any = None  # a _target_ block (_partial_: true), given the parameters at the call site
    # PGD adversarial training: null or {norm: linf|l2, eps: 0.1, steps: 7, step_size: null} (checked in validation)
    adversarial: Any = None

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """``adversarial`` holds only PGD's settings (their values: ``KEY_RULES``)."""
        adversarial = get(node, "adversarial")
        if isinstance(adversarial, DictConfig):
            unknown = [str(k) for k in adversarial.keys() if k not in PGD_KEYS]
            context.require(not unknown, unknown_keys_message(f"{path}.adversarial", unknown, PGD_KEYS))


@dataclass
class SklearnModelConf(Part):
    """``conf/model/{svm,logreg}.yaml``: a scikit-learn black box grid-searched on a table."""

    config_group: ClassVar[str] = "model"
    schema_name: ClassVar[Optional[str]] = "sklearn_schema"

    name: Optional[str] = None  # the label of tables and W&B tags
    train: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.models.sklearn_training.train_sklearn"))
    # the estimator: {_target_: <a scikit-learn class>, _partial_: true, <its own keyword arguments>};
    # training supplies random_state. A target file stores only advaudit.models.targets.formats.checkpoint's allowed classes
    estimator: Any = MISSING
    grid: Dict[str, Any] = field(default_factory=dict)  # GridSearchCV's param_grid (3-fold CV); {} fits as given

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """A scikit-learn black box fits tables only."""
        dataset = context.cfg.get("dataset")
        if dataset is not None:
            context.require(str(get(dataset, "_target_")).endswith("TabularDataModule"),
                            f"model={get(node, 'name')} is a black box for tables; use dataset=tabular "
                            "(or a torch model for images)")


@dataclass
class GeneratorModelConf(Part):
    """``conf/model/generator.yaml``: the conditional generator of the fault tests."""

    config_group: ClassVar[str] = "model"
    schema_name: ClassVar[Optional[str]] = "generator_schema"

    train: FunctionConf = field(default_factory=lambda: FunctionConf(
        "advaudit.models.generator_training.train_generator"))
    # how it learns: adversarial (a critic on the dataset's images: the DCGAN) or rendered (fitted to the
    # world's renders of the scenes its latents name; dataset=shapes only: advaudit/models/generators/rendered_generator.py)
    objective: str = "adversarial"
    latent_dim: int = 64
    width: int = 32
    trunk_layers: int = 0  # hidden linear + ReLU layers of trunk_width before block 0's linear (0: the DCGAN's single linear)
    trunk_width: int = 512
    lr: float = 0.0002
    # rendered objective only: batches per epoch (each a fresh draw of scenes) and the extra weight of
    # object pixels in its L1 loss
    steps_per_epoch: int = 200
    object_weight: float = 4.0
    class_weight: float = 1.0  # auxiliary classification loss on the critic's class head (AC-GAN)
    diversity_weight: float = 1.0  # mode-seeking term against generators that ignore the latent
    # optional: a classifier of the same data trained on the real images; reports the share of generated
    # samples it assigns to their class (generator/class_agreement) and its accuracy on real test images
    quality_target: Optional[str] = None
    # optional: refuse a generator whose class agreement is below this share (needs quality_target); a
    # refused one is saved as checkpoints/generator_below_gate.pt and the fault-test audit will not use it
    quality_gate: Optional[float] = None
    # optional: a frozen classifier trained on the real images (never the quality_target) whose
    # cross-entropy on the fakes' classes the generator also minimises (x teacher_weight): the class
    # signal for data whose classes the critic's own head learns slowly (on ShapeWorld the generator
    # learnt to fool it rather than to draw the classes: docs/results/fault_tests/fault-tests.md)
    class_teacher: Optional[str] = None
    teacher_weight: float = 1.0

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """``quality_target`` must be a file."""
        quality = get(node, "quality_target")
        if quality:
            context.file(quality, f"{path}.quality_target", "a classifier target.pt written by train.py")
