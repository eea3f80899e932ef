"""What a part's settings dataclass declares besides its fields: where Hydra stores it, its checks.

A built-in part (an audit, an examiner, a world, a search method, a dataset, a model's training)
declares its settings as one dataclass beside the code it configures (``advaudit/<package>/settings.py``
or the part's own module), mixing in :class:`Part`: ``config_group`` and ``schema_name`` say where
:mod:`advaudit.registry` stores it in Hydra's ConfigStore (the YAML option names it in its
``defaults:``), and :meth:`Part.check` holds the rules that tie its keys to each other or to other
parts' keys (single-field rules sit next to the fields: :func:`advaudit.config.ranges.ranged`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Optional

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

    @classmethod
    def check(cls, node: Any, path: str, context: "Context") -> None:
        """The rules of ``node`` (this part's composed block, at dotted ``path``) that no single field can
        say, added with ``context.require`` / ``context.warn``; its fields' ranges are checked before. None
        by default."""
