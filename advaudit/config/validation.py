"""The machinery of the checks that run once before a task starts: problems, files, factors.

:class:`Checks` collects every problem and warning of one config (reported together, each naming its
key and the nearest valid value). :class:`Context` is what a part's cross-key check
(:meth:`advaudit.config.part.Part.check`) receives: the whole config, the collected problems, and
the helpers every part shares (ranges, files, factor bounds and names, another part's check).
Which part a block is, and so which check runs, is :mod:`advaudit.registry`'s to say; nothing here
names an audit, an examiner or a world.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.config.ranges import range_problems
from advaudit.errors import AdvauditError, warn
from advaudit.files import describe_path


class Checks:
    """Collects the problems and warnings of one config; :meth:`raise_if_any` reports them at once."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def require(self, condition: bool, message: str) -> bool:
        if not condition:
            self.problems.append(message)
        return bool(condition)

    def warn(self, condition: bool, message: str) -> None:
        if condition:
            self.warnings.append(message)

    def ranges(self, node: Any, path: str, schema: type | None = None, deep: bool = True) -> None:
        """The range rules of every schema field in ``node`` (at ``path``; ``schema`` for an untyped
        ``node``): :mod:`advaudit.config.ranges`."""
        self.problems += range_problems(node, path, self.warnings, schema=schema, deep=deep)

    def raise_if_any(self) -> None:
        for message in self.warnings:
            warn(message)
        if len(self.problems) == 1:
            raise AdvauditError(self.problems[0])
        if self.problems:
            raise AdvauditError(f"{len(self.problems)} problems in the config: " + "; ".join(self.problems))


#: ``(group, block) -> its settings dataclass or None``: the registry's lookup of a block's part
SchemaOf = Callable[[str, Any], "type | None"]


@dataclass
class Context:
    """What a part's check gets: the whole config ``cfg``, the ``checks`` collected so far, and
    ``schema_of`` (which dataclass a block of a group is: :func:`advaudit.registry.schema_of`)."""

    cfg: DictConfig
    checks: Checks
    schema_of: SchemaOf

    def require(self, condition: bool, message: str) -> bool:
        return self.checks.require(condition, message)

    def warn(self, condition: bool, message: str) -> None:
        self.checks.warn(condition, message)

    def ranges(self, node: Any, path: str, schema: type | None = None, deep: bool = True) -> None:
        self.checks.ranges(node, path, schema, deep)

    def check_part(self, group: str, node: Any, path: str, fallback: type | None = None) -> None:
        """Check the block ``node`` (at ``path``) of ``group``: its fields' ranges, then its part's
        :meth:`~advaudit.config.part.Part.check`. A block of the user's own, with no settings dataclass, is
        held to ``fallback`` (the keys it shares with advaudit's parts) and ``fallback``'s check."""
        if not isinstance(node, DictConfig):
            return
        schema = self.schema_of(group, node) or fallback
        self.ranges(node, path, schema)
        if schema is not None and hasattr(schema, "check"):
            schema.check(node, path, self)

    def factor_names(self, group: str, node: Any) -> list[str] | None:
        """The factor names of the world (or rendered dataset) the block ``node`` of ``group`` builds;
        None where its part does not declare them (``factors_from``)."""
        schema = self.schema_of(group, node) if node is not None else None
        return factors_of(schema)

    def known_factor_names(self, group: str, node: Any, names: Iterable[str], key: str) -> None:
        """``names`` (at ``key``) are factors of the world ``node`` of ``group`` builds, where it says."""
        known = self.factor_names(group, node)
        if known is None:
            return
        unknown = [n for n in names if n not in known]
        self.require(not unknown, f"{key} names unknown factors {unknown}; this world's factors are {known}")

    def factor_bounds(self, group: str, node: Any, key: str, field: str) -> None:
        """``node[field]`` (at ``key``), ``{name: [low, high] | value | {low, high}}``: factors of the
        world, two bounds, ``low <= high``."""
        factors = plain(get(node, field))
        if not factors:
            return
        if not self.require(isinstance(factors, Mapping), f"{key}={factors!r} must map factor names to "
                            "[low, high] or one value, e.g. {camera_elevation: [-30, 30]}"):
            return
        self.known_factor_names(group, node, factors.keys(), key)
        for name, value in factors.items():
            if isinstance(value, Mapping):
                low, high = value.get("low"), value.get("high")
            elif isinstance(value, list):
                if not self.require(len(value) == 2, f"{key}.{name}={value} must be [low, high] or one value"):
                    continue
                low, high = value
            else:
                low = high = value
            numbers = [v for v in (low, high) if v is not None]
            if not self.require(all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers),
                                f"{key}.{name}={value} must be numbers"):
                continue
            if low is not None and high is not None:
                self.require(low <= high, f"{key}.{name} has low={low} > high={high}; swap the bounds: "
                             f"{key}.{name}=[{high}, {low}]")

    def file(self, path: Any, key: str, expected: str) -> None:
        """``path`` must be an existing, non-empty file; the message says what it is instead."""
        if isinstance(path, (list, ListConfig)):
            self.checks.problems.append(f"{key} is a list {list(path)}; give one path (sweep several with -m "
                                        f"{key}=a.pt,b.pt)")
            return
        p = Path(str(path)).expanduser()
        what = describe_path(p)
        self.require(what == "a file", f"{key}={p} is {what}; expected {expected}")

    def directory(self, path: Any, key: str, expected: str) -> None:
        p = Path(str(path)).expanduser()
        what = describe_path(p)
        self.require(what == "a directory", f"{key}={p} is {what}; expected {expected}")


def factors_of(schema: type | None) -> list[str] | None:
    """The factor names a part's ``factors_from`` (``"module:LIST+LIST"``, lists of factors) names."""
    spec = getattr(schema, "factors_from", None)
    if not spec:
        return None
    module, names = spec.split(":")
    loaded = importlib.import_module(module)  # only when a config names factors: worlds import torch
    return [f.name for part in names.split("+") for f in getattr(loaded, part)]


def get(node: Any, key: str) -> Any:
    """``node[key]`` as plain data (enums as strings), ``None`` when absent."""
    if node is None:
        return None
    if isinstance(node, DictConfig):
        if key not in node or OmegaConf.is_missing(node, key):
            return None
        value = node[key]
    elif isinstance(node, Mapping):
        value = node.get(key)
    else:
        return None
    return value.value if isinstance(value, Enum) else value


def plain(value: Any) -> Any:
    """A config node as plain containers (enums as strings); anything else as it is."""
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True, enum_to_str=True)
    return value
