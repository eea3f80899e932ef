"""What a part's settings dataclass declares besides its fields: where Hydra stores it, its checks.

A built-in part (an audit, an examiner, a world, a search method, a dataset, a model's training)
declares its settings as one dataclass beside the code it configures (``advaudit/<package>/settings.py``
or the part's own module), mixing in :class:`Part`: ``config_group`` and ``schema_name`` say where
:mod:`advaudit.registry` stores it in Hydra's ConfigStore (the YAML option names it in its
``defaults:``), and :meth:`Part.check` holds the rules that tie its keys to each other or to other
parts' keys (single-field rules sit next to the fields: :func:`advaudit.config.ranges.ranged`). An audit's
settings also carry its :class:`advaudit.config.audit_card.AuditCard` (``card``), filed under the audit's name
when the class is defined.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from advaudit.config.audit_card import AuditCard, register

if TYPE_CHECKING:
    from advaudit.config.validation import Context


class Part:
    """Mixin of a part's settings dataclass (class attributes only: no field, no ``__post_init__``)."""

    #: the config group the dataclass belongs to (``audit``, ``examiner``, ``world``, ``search/method``, ...)
    config_group: ClassVar[str] = ""
    #: its name in the ConfigStore (``<name>_schema``); None: a base other schemas extend, not stored
    schema_name: ClassVar[Optional[str]] = None
    #: a world's (or rendered dataset's) factors, ``"module:LIST+LIST"`` (lists of ``Factor``): the names
    #: that ``factors`` and the audits' factor keys are checked against; None: not known here
    factors_from: ClassVar[Optional[str]] = None
    #: an audit's card: what the comparison, W&B and the reports read about its runs (None: not an audit)
    card: ClassVar[Optional[AuditCard]] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """File the card a class declares (``card = AuditCard(...)``) under its ``name`` default."""
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("card") is not None:
            register(str(cls.__dict__.get("name", cls.__name__)), cls.__dict__["card"])

    @classmethod
    def check(cls, node: Any, path: str, context: "Context") -> None:
        """The rules of ``node`` (this part's composed block, at dotted ``path``) that no single field can
        say, added with ``context.require`` / ``context.warn``; its fields' ranges are checked before. None
        by default."""


#: a module that declares a part's settings stores it under a name (:attr:`Part.schema_name`)
_DECLARES = re.compile(r"^\s+schema_name: ClassVar\[", re.M)


def declaring_modules(package: Path) -> list[str]:
    """The modules under the folder ``package`` (of advaudit's package) that declare a part's settings, sorted
    (read from their sources: nothing is imported)."""
    root = package.parent
    while (root / "__init__.py").exists():
        root = root.parent
    found = []
    for path in sorted(package.rglob("*.py")):
        if _DECLARES.search(path.read_text()):
            parts = path.relative_to(root).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(found)
