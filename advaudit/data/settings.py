"""The data modules' settings (``conf/dataset/<name>.yaml`` names its dataclass here)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional

from omegaconf import MISSING, OmegaConf

from advaudit.config.part import Part
from advaudit.config.validation import Context, get
from advaudit.config.ranges import Rule, ranged
from advaudit.config.rules import CHANNELS, IMAGE_SIZE, PER_CLASS, SPLITS, TEST_FRACTION, VAL_FRACTION
from advaudit.worlds.settings import MeshWorldConf


@dataclass
class DatasetConf(Part):
    """Keys every :class:`advaudit.data.base.ArrayDataModule` takes."""

    config_group: ClassVar[str] = "dataset"

    _target_: str = MISSING
    batch_size: int = ranged(128, low=1, integer=True)
    val_fraction: float = ranged(0.1, rule=VAL_FRACTION)
    seed: int = 0
    # null or {train: n, val: n, test: n}: seeded random caps for quick runs (null for a split: all of it)
    limit: Any = ranged(None, rule=Rule(low=1, integer=True, each=True, keys=SPLITS, keys_name="split",
                                        message="{path}={value} must be >= 1 (or null for all)"))
    classes: Optional[List[Any]] = None  # keep only these classes (names or indices), renumbered in this order
    # bias injection on the training split (advaudit.data.bias):
    #   drop_subgroup: {class: c, attribute: a, low: l, high: h}
    #   max_per_group: {m: 10, group: instance|class}
    #   test_grayscale: true          (test-time shift)
    #   spurious: {class: c, kind: patch|brightness|column, strength: 1.0, fraction: 1.0}
    bias: Dict[str, Any] = field(default_factory=dict)
    num_workers: int = ranged(0, low=0, integer=True)

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """Required keys left ``???``, and factor bounds against the world a rendered dataset draws from."""
        for name in ("root", "name", "_target_"):
            context.require(not OmegaConf.is_missing(node, name) if name in node else True,
                            f"{path}.{name} is required; set {path}.{name}=<value>")
        context.factor_bounds("dataset", node, f"{path}.factors", "factors")
        context.factor_bounds("dataset", node, f"{path}.eval_factors", "eval_factors")


@dataclass
class FashionMNISTDatasetConf(DatasetConf):
    schema_name: ClassVar[Optional[str]] = "fashion_mnist_schema"
    _target_: str = "advaudit.data.fashion_mnist.FashionMNISTDataModule"
    root: str = "/usr/share/datasets/fashion-mnist"  # the four idx .gz files (Debian package dataset-fashion-mnist)


@dataclass
class DigitsDatasetConf(DatasetConf):
    schema_name: ClassVar[Optional[str]] = "digits_schema"
    _target_: str = "advaudit.data.sklearn_sets.DigitsDataModule"
    test_fraction: float = ranged(0.25, rule=TEST_FRACTION)


@dataclass
class TabularDatasetConf(DatasetConf):
    schema_name: ClassVar[Optional[str]] = "tabular_schema"
    _target_: str = "advaudit.data.sklearn_sets.TabularDataModule"
    # bundled: breast_cancer | wine | digits | iris (sklearn), fair | anes96 (statsmodels); or path=<file.csv> with label_column
    name: str = "breast_cancer"
    path: Optional[str] = None
    label_column: str = "label"
    test_fraction: float = ranged(0.25, rule=TEST_FRACTION)

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """A table read from ``path`` must be a file."""
        super().check(node, path, context)
        if get(node, "path"):
            context.file(get(node, "path"), f"{path}.path", "a CSV file with a header row")


@dataclass
class ImageFolderDatasetConf(DatasetConf):
    schema_name: ClassVar[Optional[str]] = "image_folder_schema"
    _target_: str = "advaudit.data.folders.ImageFolderDataModule"
    root: str = MISSING  # root/<class>/*.png, or root/train/<class> + root/test/<class>
    image_size: int = ranged(32, rule=IMAGE_SIZE)
    channels: int = ranged(3, rule=CHANNELS)
    test_fraction: float = ranged(0.2, rule=TEST_FRACTION)
    strict: bool = False  # unreadable image files: false = named in a warning and skipped (counted); true = refused

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """``root`` must be a folder."""
        super().check(node, path, context)
        root = get(node, "root")
        if root:
            context.directory(root, f"{path}.root", "a folder of class sub-folders with images")


@dataclass
class TorchvisionDatasetConf(DatasetConf):
    schema_name: ClassVar[Optional[str]] = "torchvision_schema"
    _target_: str = "advaudit.data.folders.TorchvisionDataModule"
    name: str = MISSING
    root: str = MISSING
    image_size: int = ranged(32, rule=IMAGE_SIZE)
    channels: int = ranged(3, rule=CHANNELS)


@dataclass
class ShapesDatasetConf(DatasetConf):
    schema_name: ClassVar[Optional[str]] = "shapes_schema"
    factors_from: ClassVar[Optional[str]] = "advaudit.worlds.shapes.world:DEFAULT_FACTORS"

    _target_: str = "advaudit.data.shapes.ShapesDataModule"
    m: int = ranged(10, low=1, integer=True)  # renders per training instance
    m_eval: int = ranged(10, low=1, integer=True)  # renders per validation/test instance
    # true: m NEW random conditions per training instance every epoch (seeded per epoch; val/test
    # fixed): strong targets. false: one fixed set (paper, Table 3)
    fresh: bool = False
    image_size: int = ranged(32, rule=IMAGE_SIZE)
    instances_per_class: Dict[str, int] = ranged(factory=lambda: {"train": 40, "val": 10, "test": 10}, rule=PER_CLASS)
    world_seed: int = 0
    shadows: bool = True
    # training-time factor bounds, e.g. {camera_elevation: [-30, 30]} (paper Section 4.4; checked by DatasetConf.check)
    factors: Any = None
    eval_factors: Any = None  # validation/test factor bounds (null: the world's default bounds)
    cache_dir: Optional[str] = None
    val_fraction: float = ranged(0.0, rule=VAL_FRACTION)


#: MeshWorld's keys that ``dataset=meshes`` sets through the data module, not in ``dataset.world``
_MESH_DATASET_OWN = ("_target_", "image_size", "factors", "cache_dir", "device")


def _mesh_dataset_world() -> Dict[str, Any]:
    """``dataset=meshes``'s default ``world``: MeshWorldConf's defaults, but the keys the data module sets."""
    return {k: v for k, v in dataclasses.asdict(MeshWorldConf()).items() if k not in _MESH_DATASET_OWN}


@dataclass
class MeshesDatasetConf(DatasetConf):
    """``conf/dataset/meshes.yaml``; ``world`` takes MeshWorld's keys but ``image_size``."""

    schema_name: ClassVar[Optional[str]] = "meshes_schema"
    factors_from: ClassVar[Optional[str]] = "advaudit.worlds.shapes.world:DEFAULT_FACTORS"

    _target_: str = "advaudit.data.meshes.MeshesDataModule"
    m: int = ranged(10, low=1, integer=True)  # renders per training instance
    m_eval: int = ranged(10, low=1, integer=True)  # renders per validation/test instance
    fresh: bool = False  # new random training conditions every epoch (as dataset=shapes)
    image_size: int = ranged(32, rule=IMAGE_SIZE)
    # the world: MeshWorld's keys (conf/world/meshes.yaml: MeshWorldConf) but image_size, factors,
    # cache_dir and device, which are the data module's (root: builtin = ShapeWorld's objects as meshes)
    world: Dict[str, Any] = field(default_factory=_mesh_dataset_world)
    # training-time factor bounds, e.g. {camera_elevation: [-30, 30]} (paper Section 4.4; checked by DatasetConf.check)
    factors: Any = None
    eval_factors: Any = None  # validation/test factor bounds (null: the world's default bounds)
    cache_dir: Optional[str] = None
    val_fraction: float = ranged(0.0, rule=VAL_FRACTION)
