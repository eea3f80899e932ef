"""Range rules of single settings, declared next to their schema field and checked in one place.

A schema field carries its rule as dataclass metadata::

    budget: int = ranged(500, low=1, integer=True)
    adam_lr: float = ranged(0.03, learning_rate=True)
    image_size: int = ranged(32, rule=IMAGE_SIZE)  # one Rule shared by several fields

:func:`range_problems` walks a composed config and checks every field of every schema-typed
mapping (``OmegaConf.get_type``), so a rule is written once and holds wherever its schema is used;
:class:`Ranged` checks the same rules when a schema object is built (``OmegaConf.to_object``).
Keys of blocks that another library defines (a Lightning trainer's, a torch optimizer's) have no
schema field; their rules are declared by dotted key and checked by :func:`key_rule_problems`.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping

from omegaconf import DictConfig, OmegaConf

from advaudit.errors import AdvauditError

RANGE = "range"


@dataclass(frozen=True)
class Rule:
    """Allowed values of one setting: a number in ``[low, high]`` (open ends with ``low_open``/``high_open``),
    a learning rate, or one of ``choices``.

    ``each``: the setting is one value or a mapping (``{split: count}``); the rule holds for the value,
    or for each of the mapping's values (``None`` entries allowed), whose keys must be among ``keys``
    when given. ``message``: the one line printed for any value outside the rule, a template with
    ``{path}`` and ``{value}``; without it the line says which bound is broken and the nearest valid
    value. ``required``: ``None`` is outside the rule too (checked only where the setting's block is
    given).
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    learning_rate: bool = False  # a positive, finite number (warned about above 1)
    choices: tuple[Any, ...] | None = None
    each: bool = False
    keys: tuple[str, ...] | None = None
    keys_name: str = ""  # what the keys are, for the message ("split")
    message: str | None = None
    required: bool = False

    def problem(self, path: str, value: Any) -> str | None:
        """The first one-line problem of ``value`` at ``path``, or None when it is allowed (or unset)."""
        problems = self.problems(path, value)
        return problems[0] if problems else None

    def problems(self, path: str, value: Any) -> list[str]:
        """One line per value outside the rule (one per mapping entry with ``each``)."""
        if self.each and isinstance(value, Mapping):
            found = []
            for key, entry in value.items():
                if self.keys is not None and key not in self.keys:
                    named = f"{self.keys_name} {key!r}" if self.keys_name else repr(key)
                    found.append(f"{path} names {named}; use {', '.join(self.keys[:-1])} or {self.keys[-1]}")
                elif entry is not None and (problem := self._value_problem(f"{path}.{key}", entry)) is not None:
                    found.append(problem)
            return found
        if value is None and not self.required:
            return []
        problem = self._value_problem(path, value)
        return [] if problem is None else [problem]

    def _value_problem(self, path: str, value: Any) -> str | None:
        problem = self._bound_problem(path, value)
        if problem is None or self.message is None:
            return problem
        return self.message.format(path=path, value=value)

    def _bound_problem(self, path: str, value: Any) -> str | None:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if self.choices is not None:
            if value in self.choices and (number or not isinstance(value, bool)):
                return None
            return f"{path}={value!r}; use {', '.join(map(str, self.choices[:-1]))} or {self.choices[-1]}"
        if self.learning_rate:
            if not (number and math.isfinite(value) and value > 0):
                return f"{path}={value} must be a positive number (e.g. {path}=0.001)"
            return None
        if not number:
            return f"{path}={value!r} must be a number"
        if self.integer and not isinstance(value, int):
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


def ranged(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None,
           rule: Rule | None = None, **bounds: Any) -> Any:
    """A dataclass field with ``default`` (or ``factory``, for a mutable default) and a range :class:`Rule`:
    ``rule`` itself (one rule shared by several fields) or built from the keyword arguments ``bounds``."""
    metadata = {RANGE: rule if rule is not None else Rule(**bounds)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def rules_of(schema: type) -> dict[str, Rule]:
    """``{field name: Rule}`` of the schema dataclass ``schema``."""
    return {f.name: f.metadata[RANGE] for f in dataclasses.fields(schema) if RANGE in f.metadata}


def require_within(schema: type, name: str, value: Any, path: str) -> None:
    """Refuse ``value`` for the field ``name`` of ``schema`` where it is outside the field's declared rule:
    a constructor called directly (not through a validated config) checks its arguments by the same rule.

    Raises:
        AdvauditError: the rule's one line (:meth:`Rule.problem`), naming ``path``.
    """
    problem = rules_of(schema)[name].problem(path, value)
    if problem is not None:
        raise AdvauditError(problem)


def range_problems(node: Any, path: str, warnings: list[str] | None = None, schema: type | None = None,
                   deep: bool = True) -> list[str]:
    """One line per value of ``node`` (at dotted ``path``) outside its schema field's rule.

    ``node``'s schema is its structured-config type (``OmegaConf.get_type``), else ``schema`` (the rules
    an untyped block, e.g. one written on the command line, is held to). With ``deep``, every mapping
    below ``node`` typed by a schema dataclass is checked too; untyped mappings are walked through.
    Warnings (legal but unlikely values) are appended to ``warnings`` when given.
    """
    problems: list[str] = []
    if not isinstance(node, DictConfig) or node._is_none() or node._is_missing():
        return problems
    own = OmegaConf.get_type(node)
    own = own if own is not None and dataclasses.is_dataclass(own) else schema
    rules = rules_of(own) if own is not None else {}
    for key in node.keys():
        where = f"{path}.{key}" if path else str(key)
        if OmegaConf.is_missing(node, key):
            continue
        rule = rules.get(str(key))
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not (rule is not None and rule.each):
            if deep:
                problems += range_problems(child, where, warnings)
            continue
        if rule is None:
            continue
        value = node[key]
        value = OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value
        value = value.value if isinstance(value, Enum) else value
        found = rule.problems(where, value)
        problems += found
        if not found and warnings is not None and (warning := rule.warning(where, value)) is not None:
            warnings.append(warning)
    return problems


def key_rule_problems(cfg: Any, rules: Mapping[str, Rule], warnings: list[str] | None = None) -> list[str]:
    """One line per value outside its rule in ``rules`` (``{dotted key: Rule}``), for keys of blocks that
    no advaudit schema types (a Lightning trainer's, a torch optimizer's). A rule holds where the key's
    block is given; warnings are appended to ``warnings`` when given.
    """
    problems: list[str] = []
    for key, rule in rules.items():
        *parents, name = key.split(".")
        block = cfg
        for parent in parents:
            block = _child(block, parent)
        if not block or not isinstance(block, (DictConfig, Mapping)):
            continue
        value = _child(block, name)
        found = rule.problems(key, value)
        problems += found
        if not found and warnings is not None and (warning := rule.warning(key, value)) is not None:
            warnings.append(warning)
    return problems


def _child(node: Any, key: str) -> Any:
    """``node[key]`` as plain data (enums as strings), ``None`` when absent, missing or not a mapping."""
    if isinstance(node, DictConfig):
        if key not in node or OmegaConf.is_missing(node, key):
            return None
        value = node[key]
        value = OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value
    elif isinstance(node, Mapping):
        value = node.get(key)
    else:
        return None
    return value.value if isinstance(value, Enum) else value


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
