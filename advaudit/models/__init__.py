"""Target classifiers, generators and checkpoint I/O."""

from advaudit.models.io import Target, load_generator, load_target, save_generator, save_target
from advaudit.models.target import SklearnTarget, TorchTarget

__all__ = ["Target", "TorchTarget", "SklearnTarget", "load_target", "save_target", "load_generator",
           "save_generator"]
