"""What an audit declares about itself for the code that reads its runs: an :class:`AuditCard`.

An audit's settings dataclass (a :class:`advaudit.config.part.Part` of the ``audit`` group) carries its card as
a class attribute, ``card: ClassVar[AuditCard] = AuditCard(...)``, and defining the class files the card under
the audit's name (the dataclass's ``name`` default) in :data:`CARDS`. The comparison
(:mod:`advaudit.compare`), W&B (:mod:`advaudit.core.wandb_run`) and the reports read the card, so none of them
names an audit: which config sections define an examination, which config key names the method that tells runs
of one audit apart, which result keys are compared (with their direction, floor and ceiling, the primary
question first), and whether the audit searches a world's conditions (then the comparison replays them, breaks
them down by factor and says where and why checkpoints differ). It sits in the bottom layer so every layer may
read it; :mod:`advaudit.audits.cards` imports advaudit's audits before reading it (``python -m advaudit.compare``
imports nothing else that would).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

__all__ = ["AuditCard", "CARDS", "Metric", "MetricPattern", "card_of", "register"]


@dataclass(frozen=True)
class Metric:
    """A headline number of an audit.

    Attributes:
        key: the result.json key (``examine/worst``).
        higher_is_better: for the checkpoint (``None``: no direction, e.g. an error-search SDR,
            which describes the search method more than the model).
        column: the per-instance column whose mean it is (``None``: only run-level values).
        binary: the column is a 0/1 outcome (paired test: McNemar, not Wilcoxon).
        label: words for the report.
        low, high: the metric's floor and ceiling (``None``: unbounded on that side), where a
            checkpoint's score stops telling it apart from another (every worst case at 0.00, every
            instance failed): :mod:`advaudit.compare.verdict` says so instead of naming a weaker one.
    """

    key: str
    higher_is_better: bool | None
    column: str | None = None
    binary: bool = False
    label: str = ""
    low: float | None = 0.0
    high: float | None = 1.0

    @property
    def words(self) -> str:
        return self.label or self.key


@dataclass(frozen=True)
class MetricPattern:
    """A family of result keys compared alike (``search/<method>/sdr@<k>``): each key matching ``pattern``
    becomes a :class:`Metric` labelled ``"<words> (<key>)"``, with no per-instance column."""

    pattern: str
    higher_is_better: bool | None
    words: str
    high: float | None = 1.0

    def metrics(self, keys: Iterable[str]) -> list[Metric]:
        """The metrics of the ``keys`` this pattern matches, sorted by key."""
        return [Metric(k, self.higher_is_better, label=f"{self.words} ({k})", high=self.high)
                for k in sorted(keys) if re.match(self.pattern, k)]


@dataclass(frozen=True)
class AuditCard:
    """What the comparison, W&B and the reports read about an audit's runs.

    Attributes:
        sections: the config sections besides ``audit`` whose values define an examination (runs that differ
            in them are not compared); None: every section but bookkeeping (:data:`advaudit.compare.design.BOOKKEEPING`).
        method: the dotted config key whose value names the method that tells runs of this audit apart
            (``examiner.name``): it labels comparison groups and tags W&B runs; None: no method.
        metrics: the result keys compared, the primary question first (the primary when runs declare none:
            ``audit.metric``).
        patterns: families of result keys compared (error-search SDR per method), used when no key of
            ``metrics`` is present.
        searches_world: the audit searches a world's conditions per instance (the run config's ``world``
            rebuilds it, ``steps.jsonl`` holds every proposal and ``per_instance`` each instance's worst
            condition ``worst_s``): the comparison replays worst conditions on the other checkpoints, breaks
            failures down by factor, and runs its where and why sections.
        control: the result key of accuracy under random conditions, the replay's control (with ``searches_world``).
    """

    sections: Optional[tuple[str, ...]] = None
    method: Optional[str] = None
    metrics: tuple[Metric, ...] = ()
    patterns: tuple[MetricPattern, ...] = ()
    searches_world: bool = False
    control: Optional[str] = None

    @property
    def primary(self) -> Optional[str]:
        """The key of the audit's primary question (its first metric), or None."""
        return self.metrics[0].key if self.metrics else None

    def metric(self, key: str) -> Optional[Metric]:
        """The declared metric ``key``, or None."""
        return next((m for m in self.metrics if m.key == key), None)

    def method_in(self, config: Mapping[str, Any]) -> Optional[str]:
        """The method a run's (plain, resolved) ``config`` names at :attr:`method` (``examiner.name``), or None."""
        value: Any = config if self.method else None
        for key in (self.method or "").split(".") if value is not None else ():
            value = value.get(key) if isinstance(value, Mapping) else None
        return str(value) if value and not isinstance(value, (Mapping, list)) else None


#: audit name -> its card, filled as the audits' settings classes are defined (:class:`advaudit.config.part.Part`)
CARDS: dict[str, AuditCard] = {}


def register(name: str, card: AuditCard) -> None:
    """File ``card`` under the audit ``name`` (a class defined twice, as in a reload, files it again)."""
    if not isinstance(card, AuditCard):
        raise TypeError(f"the audit {name!r} declares card={card!r}; an audit's card is an AuditCard")
    CARDS[str(name)] = card


def card_of(name: object) -> Optional[AuditCard]:
    """The card of the audit ``name`` among those defined so far, or None (an audit of the user's own package)."""
    return CARDS.get(str(name))
