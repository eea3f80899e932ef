"""advaudit: train classifiers, then audit them for the weaknesses average accuracy hides.

:func:`load_target` (:mod:`advaudit.models.targets.io`) scores a batch from Python, as every audit loads a target.
"""

import advaudit.registry  # noqa: F401  (registers the dataset schemas a block's `dataset: <name>` composes from)
from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.sweep import resolvers as _resolvers  # noqa: F401  (${cores_per_job:N} for launcher configs)

__all__ = ["AdvauditError", "load_target"]
__version__ = "0.1.0"
