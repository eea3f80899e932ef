"""Range rules of single settings, declared next to their schema field and checked in one place.

A schema field carries its rule as dataclass metadata::

    budget: int = ranged(500, low=1, integer=True)
    adam_lr: float = ranged(0.03, learning_rate=True)

:func:`range_problems` walks a composed config and checks every field of every schema-typed
mapping (``OmegaConf.get_type``), so a rule is written once and holds wherever its schema is used;
:class:`Ranged` checks the same rules when a schema object is built (``OmegaConf.to_object``).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf

from advaudit.errors import AdvauditError

RANGE = "range"


@dataclass(frozen=True)
class Rule:
    """Allowed values of one number: ``[low, high]`` (open ends with ``low_open``/``high_open``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    learning_rate: bool = False  # a positive, finite number (warned about above 1)

    def problem(self, path: str, value: Any) -> str | None:
        """The one-line problem of ``value`` at ``path``, or None when it is allowed (or unset)."""
        if value is None:
            return None
        if self.learning_rate:
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not (number and math.isfinite(value) and value > 0):
                return f"{path}={value} must be a positive number (e.g. {path}=0.001)"
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return f"{path}={value!r} must be a number"
        if self.integer and int(value) != value:
            return f"{path}={value} must be a whole number"
        if not math.isfinite(float(value)):
            return f"{path}={value} must be finite"
        low, high = self.low, self.high
        if low is not None and (value <= low if self.low_open else value < low):
            if self.low_open:
                return f"{path}={value} must be > {low}"
            return f"{path}={value} must be >= {low}; the nearest valid value is {low}"
        if high is not None and (value >= high if self.high_open else value > high):
            if self.high_open:
                return f"{path}={value} must be < {high}"
            return f"{path}={value} must be <= {high}; the nearest valid value is {high}"
        return None

    def warning(self, path: str, value: Any) -> str | None:
        """A legal value that is probably not what the user meant (a learning rate above 1)."""
        if self.learning_rate and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1:
            return f"{path}={value} is unusually large for a learning rate; training will likely diverge"
        return None


def ranged(default: Any, **rule: Any) -> Any:
    """A dataclass field with ``default`` and the range :class:`Rule` ``rule`` (its keyword arguments)."""
    return field(default=default, metadata={RANGE: Rule(**rule)})


def rules_of(schema: type) -> dict[str, Rule]:
    """``{field name: Rule}`` of the schema dataclass ``schema``."""
    return {f.name: f.metadata[RANGE] for f in dataclasses.fields(schema) if RANGE in f.metadata}


def range_problems(node: Any, path: str, warnings: list[str] | None = None) -> list[str]:
    """One line per value of ``node`` (at dotted ``path``) outside its schema field's rule.

    Every mapping below ``node`` typed by a schema dataclass is checked; untyped mappings are walked
    through. Warnings (legal but unlikely values) are appended to ``warnings`` when given.
    """
    problems: list[str] = []
    if not isinstance(node, DictConfig) or node._is_none() or node._is_missing():
        return problems
    schema = OmegaConf.get_type(node)
    rules = rules_of(schema) if schema is not None and dataclasses.is_dataclass(schema) else {}
    for key in node.keys():
        where = f"{path}.{key}" if path else str(key)
        if OmegaConf.is_missing(node, key):
            continue
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            problems += range_problems(child, where, warnings)
            continue
        rule = rules.get(str(key))
        if rule is None:
            continue
        value = node[key]
        problem = rule.problem(where, value)
        if problem is not None:
            problems.append(problem)
        elif warnings is not None and (warning := rule.warning(where, value)) is not None:
            warnings.append(warning)
    return problems


class Ranged:
    """Mixin of schema dataclasses: building one (``OmegaConf.to_object``, or by hand) checks its range
    rules and its choices (an ``Enum`` field takes one of its values, given as the value or its name).

    Raises:
        AdvauditError: one line naming the first value outside its rule (``config_path`` prefixes it).
    """

    def __post_init__(self) -> None:
        prefix = getattr(type(self), "config_path", "")
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            where, value = f"{prefix}.{f.name}" if prefix else f.name, getattr(self, f.name)
            kind = hints.get(f.name)
            if isinstance(kind, type) and issubclass(kind, Enum) and not isinstance(value, kind):
                choices = [str(c.value) for c in kind]
                if str(value) not in choices:
                    raise AdvauditError(f"{where}={value!r}; use {', '.join(choices[:-1])} or {choices[-1]}")
                setattr(self, f.name, kind(str(value)))
            rule = f.metadata.get(RANGE)
            problem = rule.problem(where, value) if rule is not None else None
            if problem is not None:
                raise AdvauditError(problem)
