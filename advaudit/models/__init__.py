"""The models: targets under audit (``targets/``), how advaudit trains them (``training/``), generators (``generators/``).

Users and the rest of advaudit load a target with one function, :func:`load_target` (a path, a YAML file or
a ``target`` block), and write advaudit's own file with :func:`save_target`. Generators are saved and loaded
by :mod:`advaudit.models.generators.generator` (which imports Lightning); architectures are
:mod:`advaudit.models.nets`.

The ``_target_`` paths configs name for training (``advaudit.models.classifier_training.train_classifier``,
...; conf/ and every saved run's config hold them) stay valid: :data:`CONFIG_PATHS` maps each to the module
that holds it now, imported on first use (Hydra and :func:`advaudit.confutil.locate` read a module's
attributes before its submodules).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from advaudit.models.targets.io import Target, load_target, save_target
from advaudit.models.targets.target import SklearnTarget, TorchTarget

__all__ = ["Target", "TorchTarget", "SklearnTarget", "load_target", "save_target"]

#: a config's name for a training module (``advaudit.models.<name>.<callable>``) -> the module now
CONFIG_PATHS = {
    "classifier_training": "advaudit.models.training.classifier_training",
    "sklearn_training": "advaudit.models.training.sklearn_training",
    "epoch_checkpoints": "advaudit.models.training.epoch_checkpoints",
    "generator_training": "advaudit.models.generators.generator_training",
}


def __getattr__(name: str) -> ModuleType:
    """The module a config names by its path before the split (:data:`CONFIG_PATHS`), imported when first asked."""
    if name in CONFIG_PATHS:
        return importlib.import_module(CONFIG_PATHS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
