"""Unknown keys anywhere in a config are refused, each with the closest valid key.

A key that nothing reads (``+target_class=3``, ``+trainer.max_epoch=5``, ``+audit.bugdet=8``) is a
request that would be silently ignored. :func:`unknown_key_problems` and
:func:`unknown_argument_problems` walk the composed config and name every such key with the closest
valid one. Which keys a mapping may hold:

* a mapping typed by a schema (the parts' settings :mod:`advaudit.registry` lists: the root, ``audit``, ``examiner``,
  ``world``, ``search``, ``dataset``, ``model``, ``paths``, ...): the schema's fields (the root
  also holds Hydra's own ``hydra``);
* a block built by ``_target_`` (``trainer``, ``model.arch``, ``model.optimizer``, each logger and callback, a
  dataset block such as ``audit.dataset`` or ``world.dataset``): the schema of that ``_target_``
  where advaudit has one, else the parameters of the class or function it names, plus Hydra's
  ``_partial_`` / ``_recursive_`` / ``_convert_`` / ``_args_``. A callable that takes ``**kwargs``
  (W&B's logger) or cannot be imported here (its instantiation will say why) is open;
* ``logger``, ``callbacks`` and ``search``: entries under any name, each a ``_target_`` block or null
  (``search`` also holds ``name``, the method reported first).

Everything else is open by design: the user's own names (``world.factors``, ``dataset.bias``)
and ``target``, whose loader checks it.
"""

from __future__ import annotations

import dataclasses
import inspect
from functools import lru_cache
from typing import Any, Mapping, Sequence

from hydra.utils import get_object
from omegaconf import DictConfig, OmegaConf

from advaudit.errors import unknown_keys_message

#: keys Hydra's ``instantiate`` reads from a ``_target_`` block besides the callable's arguments
HYDRA_INSTANTIATE_KEYS = ("_target_", "_partial_", "_recursive_", "_convert_", "_args_")
#: root keys whose entries are named parts, each built by ``_target_``: the tasks that build them, and
#: the group's keys that are labels rather than parts (``search.name``: the method reported first)
PART_GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "logger": (("train",), ()), "callbacks": (("train",), ()), "search": (("examine",), ("name",))}
#: root keys not looked into here: Hydra's own node, and the target (its loader checks it)
UNCHECKED_ROOT_KEYS = ("hydra", "target")
#: by dotted path, a part's block's labels (keys that are not its callable's arguments, never passed) and
#: the arguments its caller supplies (never set in config): :data:`advaudit.registry.PART_KEYS`
PartKeys = Mapping[str, tuple[Sequence[str], Sequence[str]]]
#: what to do instead of an unknown key that users are known to try
_HINTS = {
    "audit.dataset": "only audit=evaluate and audit=error_search read a dataset; the other audits take "
                     "their inputs from world (world=transforms with world.dataset=<a dataset block> "
                     "for a dataset's images) or from generator",
}


def unknown_key_problems(cfg: DictConfig, task: str, schemas: Sequence[type], part_keys: PartKeys) -> list[str]:
    """One line per mapping of ``cfg`` (a ``task`` config) whose keys nothing reads, judged by the
    ``schemas`` (a ``_target_`` block without its schema is held to the one whose ``_target_`` it names):
    cheap, nothing is imported. See :func:`unknown_argument_problems` for ``_target_`` blocks."""
    problems: list[str] = []
    _check_node(cfg, "", problems, _Walk(task, False, tuple(schemas), part_keys))
    return problems


def unknown_argument_problems(cfg: DictConfig, task: str, schemas: Sequence[type], part_keys: PartKeys) -> list[str]:
    """One line per ``_target_`` block of ``cfg`` holding keys its class or function does not take.

    This imports each callable (``pytorch_lightning`` alone takes seconds), so :func:`validate` asks
    only once every other check has passed, when the task is about to import them anyway. Logger
    blocks are judged only where the task builds them (``train``; ``examine`` reads W&B settings).
    """
    problems: list[str] = []
    _check_node(cfg, "", problems, _Walk(task, True, tuple(schemas), part_keys))
    return problems


@dataclasses.dataclass(frozen=True)
class _Walk:
    """What one walk judges: schema-typed mappings (``callables=False``) or ``_target_`` blocks
    without a schema, by their callable's signature (``callables=True``)."""

    task: str
    callables: bool
    schemas: tuple[type, ...]
    part_keys: PartKeys


def _check_node(node: DictConfig, path: str, problems: list[str], walk: _Walk) -> None:
    """Refuse the unknown keys of ``node`` (at dotted ``path``), then check its checked children."""
    valid, by_callable = _valid_keys(node, not path, walk)
    if valid is not None and by_callable and path in walk.part_keys:
        labels, supplied = walk.part_keys[path]
        valid = (valid | set(labels)) - set(supplied)
    unknown = [str(key) for key in node.keys() if valid is not None and key not in valid]
    if unknown and by_callable == walk.callables:
        message = unknown_keys_message(path, unknown, valid or ())
        hints = [_HINTS[f"{path}.{key}"] for key in unknown if f"{path}.{key}" in _HINTS]
        problems.append(message + "".join(f" ({hint})" for hint in hints))
    for key in node.keys():
        key = str(key)
        if key in unknown or (not path and key in UNCHECKED_ROOT_KEYS):
            continue
        child = _mapping(node, key)
        if child is None:
            continue
        child_path = f"{path}.{key}" if path else key
        if not path and key in PART_GROUPS:
            _check_parts(child, child_path, problems, walk)
        elif _is_checked(child):
            _check_node(child, child_path, problems, walk)


def _check_parts(node: DictConfig, path: str, problems: list[str], walk: _Walk) -> None:
    """``logger`` / ``callbacks`` / ``search``: every entry is a ``_target_`` block (checked) or null."""
    builders, labels = PART_GROUPS[path]
    for key in node.keys():
        if key in labels:
            continue
        child = _mapping(node, str(key))
        if child is not None and "_target_" in child:
            if not walk.callables or walk.task in builders:
                _check_node(child, f"{path}.{key}", problems, walk)
        elif (child is not None or not _is_null(node, str(key))) and not walk.callables:
            problems.append(f"{path}.{key} is not a part that can be built (no _target_), so nothing would "
                            f"read it; each entry of {path} is a block with _target_ (or null to turn one off)")


def _valid_keys(node: DictConfig, root: bool, walk: _Walk) -> tuple[set[str] | None, bool]:
    """The keys ``node`` may hold (``None``: open, see the module docstring), and whether they come
    from a callable's signature (imported only when ``callables``)."""
    schema = OmegaConf.get_type(node)
    if not dataclasses.is_dataclass(schema):
        target = _target(node)
        schema = _schema_of_target(target, walk.schemas) if target else None
        if schema is None:
            return (_callable_keys(target) if target and walk.callables else None), True
    fields = {f.name for f in dataclasses.fields(schema)}
    return (fields | {"hydra"} if root else fields), False


def _is_checked(node: DictConfig) -> bool:
    """A mapping with a known key set: typed by a schema, or a ``_target_`` block."""
    return dataclasses.is_dataclass(OmegaConf.get_type(node)) or _target(node) is not None


@lru_cache(maxsize=None)
def _schema_of_target(target: str, schemas: tuple[type, ...]) -> type | None:
    """The schema whose ``_target_`` default is ``target`` (a dataset or world block without its schema)."""
    for schema in schemas:
        default = next((f.default for f in dataclasses.fields(schema) if f.name == "_target_"), None)
        if default == target:
            return schema
    return None


@lru_cache(maxsize=None)
def _callable_keys(target: str) -> set[str] | None:
    """The keyword arguments ``target`` takes, with Hydra's instantiate keys; ``None`` when it takes
    ``**kwargs``, has no signature, or cannot be imported (its instantiation reports that)."""
    try:
        signature = inspect.signature(get_object(target))
    except Exception:  # not importable here, or a builtin without a signature: left to instantiate
        return None
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name for p in parameters if p.kind in named} | set(HYDRA_INSTANTIATE_KEYS)


def _mapping(node: DictConfig, key: str) -> DictConfig | None:
    """``node[key]`` when it is a mapping (not null, missing or an interpolation), else ``None``."""
    child = node._get_node(key)
    if not isinstance(child, DictConfig) or child._is_none() or child._is_missing() or child._is_interpolation():
        return None
    return child


def _is_null(node: DictConfig, key: str) -> bool:
    child: Any = node._get_node(key)
    return child is None or child._is_none()


def _target(node: DictConfig) -> str | None:
    """The ``_target_`` of ``node`` as written (``None`` when absent or not a plain string)."""
    if "_target_" not in node:
        return None
    value = node._get_node("_target_")
    raw = value._value() if value is not None else None
    return raw if isinstance(raw, str) and "${" not in raw else None
