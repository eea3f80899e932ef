"""advaudit: train classifiers, then audit them for the weaknesses average accuracy hides."""

from advaudit.api import load_target
from advaudit.errors import AdvauditError
from advaudit.sweep import resolvers as _resolvers  # noqa: F401  (${cores_per_job:N} for launcher configs)

__all__ = ["AdvauditError", "load_target"]
__version__ = "0.1.0"
