"""Target classifiers, generators and checkpoint I/O.

Generators are saved and loaded by :mod:`advaudit.models.generator` (which imports Lightning).
"""

from advaudit.models.io import Target, load_target, save_target
from advaudit.models.target import SklearnTarget, TorchTarget

__all__ = ["Target", "TorchTarget", "SklearnTarget", "load_target", "save_target"]
