"""advaudit: train classifiers, then audit them for the weaknesses average accuracy hides."""

from advaudit.errors import AdvauditError

__all__ = ["AdvauditError"]
__version__ = "0.1.0"
