"""Small helpers for OmegaConf nodes and for parts built by ``_target_``."""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
import sys
from typing import Any, Iterable, Mapping, Sequence

from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.errors import AdvauditError, one_line, require, unknown_keys_message


def override_value(value: Any) -> str:
    """Plain data as a value in Hydra's override grammar: ``{k:v,...}``, ``[a,b]``, strings quoted.

    For putting a config block on a command line or into ``compose(overrides=...)``:
    ``f"target={override_value(block)}"``; quoting keeps paths and names with ``/ - = ,`` intact.
    """
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{override_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "\\'") + "'"


def plain(node: Any, default: Any = None) -> Any:
    """A config node as resolved plain Python data; ``default`` when the node is ``None``."""
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    return default if node is None else node


def target_block_keys(node: Any) -> list[str]:
    """The keys of ``node`` (a mapping of named parts, e.g. ``search``) that hold a ``_target_`` block, in order."""
    blocks = plain(node, {}) or {}
    return [str(key) for key, value in blocks.items() if isinstance(value, dict) and "_target_" in value]


def split_target_block(block: Any, where: str, part: str, callable_kind: str,
                       example: str) -> tuple[str, dict[str, Any]]:
    """A ``_target_`` block as ``(_target_, its keyword arguments)`` (Hydra's ``_..._`` keys dropped).

    Args:
        block: the config node (or plain data) at ``where``.
        part, callable_kind, example: for the message when ``block`` names nothing (``architecture``,
            ``class or function``, ``conf/model/cnn.yaml``).

    Raises:
        AdvauditError: one line when ``block`` is not a mapping with ``_target_``.
    """
    options = plain(block, {})
    require(isinstance(options, Mapping) and "_target_" in options,
            f"{where} must be a block naming the {part}, {{_target_: <{callable_kind}>, _partial_: true, "
            f"<its settings>}} ({example} is one), not {options!r}")
    return str(options["_target_"]), {str(k): v for k, v in options.items() if not str(k).startswith("_")}


def named_object(target: str, where: str) -> Any:
    """The class or function the dotted path ``target`` names (imported), for the block at ``where``.

    Raises:
        AdvauditError: one line saying why it cannot be imported (:func:`locate`).
    """
    return locate(target, f"{where}._target_")


def locate(path: Any, key: str) -> Any:
    """The object the dotted ``path`` names (``my_pkg.models.build``), imported, for the config key ``key``.

    Raises:
        AdvauditError: one line naming ``key``, ``path``, why it cannot be imported, the closest existing
            name where one is found (a module's attributes and submodules, or the top-level modules), and the
            fix; an error raised while a module that exists is imported is named as that module's.
    """
    require(isinstance(path, str) and bool(path.strip()) and ".." not in path,
            f"{key}={path!r} is not a dotted path; give the module and the name, e.g. my_pkg.models.build")
    parts = path.strip().split(".")
    obj: Any = None
    for depth, part in enumerate(parts):
        prefix = ".".join(parts[:depth + 1])
        if depth and hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        if depth and not inspect.ismodule(obj):
            raise AdvauditError(_not_found(key, path, f"AttributeError: {'.'.join(parts[:depth])} has no attribute "
                                           f"{part!r}", _close(part, dir(obj), parts, depth), False))
        try:
            obj = importlib.import_module(prefix)
        except ModuleNotFoundError as error:
            if error.name != prefix:
                raise AdvauditError(f"{key}={path} cannot be imported: importing {prefix} failed (ModuleNotFoundError: "
                                    f"{error}); install that module or fix the import in {prefix}") from None
            known = _submodules(obj) + (dir(obj) if obj is not None else [])
            reason = f"ModuleNotFoundError: No module named {prefix!r}" if depth == 0 else \
                f"AttributeError: {'.'.join(parts[:depth])} has no attribute or submodule {part!r}"
            raise AdvauditError(_not_found(key, path, reason, _close(part, known, parts, depth), depth == 0)) from None
        except Exception as error:  # noqa: BLE001 - the user's module fails while importing: name it
            raise AdvauditError(f"{key}={path} cannot be imported: importing {prefix} raised "
                                f"{type(error).__name__}: {one_line(error)[:200]}; fix that module") from None
    return obj


def _not_found(key: str, path: str, reason: str, close: str | None, top_level: bool) -> str:
    fix = f"did you mean {key}={close}?" if close else f"correct {key}"
    if "." not in path:
        fix = f"name its module too, {key}=<module>.{path} (the module importable from PYTHONPATH)"
    elif top_level:
        fix += f" (or put the folder that holds {path.split('.')[0]} on PYTHONPATH)"
    return f"{key}={path} cannot be imported ({reason}); {fix}"


def _close(name: str, candidates: Sequence[str], parts: Sequence[str], depth: int) -> str | None:
    """``parts`` with ``parts[depth]`` replaced by the closest of ``candidates`` and each later part that does not
    exist by its closest name too: a path that imports, or ``None`` (a suggestion never names what does not exist)."""
    match = _closest(name, candidates)
    if match is None:
        return None
    fixed = [*parts[:depth], match, *parts[depth + 1:]]
    obj: Any = None
    for level, part in enumerate(fixed):
        if level and hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(fixed[:level + 1]))
            continue
        except Exception:  # noqa: BLE001 - not a module: the closest attribute or submodule of the level above
            pass
        known = (_submodules(obj) + dir(obj)) if level and inspect.ismodule(obj) else dir(obj) if level else []
        fixed[level] = _closest(part, known) or ""
        if not fixed[level] or not hasattr(obj, fixed[level]):
            return None
        obj = getattr(obj, fixed[level])
    return ".".join(fixed)


def refuse_unknown_keys(keys: Iterable[Any], known: Sequence[str], prefix: str, what: str) -> None:
    """Refuse the first of ``keys`` not in ``known``: ``<prefix>.<key> is not <what>; did you mean ...?``."""
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f"; did you mean {prefix}.{close[0]}?" if close else f"; known keys: {', '.join(known)}"
            raise AdvauditError(f"{prefix}.{key} is not {what}{hint}")


def _closest(name: str, candidates: Sequence[str]) -> str | None:
    public = sorted({c for c in candidates if not c.startswith("_")} or set(candidates))
    match = difflib.get_close_matches(name, public, n=1) or difflib.get_close_matches(name.lower(), public, n=1)
    return match[0] if match else None


def _submodules(obj: Any) -> list[str]:
    """Names of the modules importable as ``obj.<name>`` (the top-level modules when ``obj`` is ``None``)."""
    if obj is None:
        return [m.name for m in pkgutil.iter_modules()] + list(sys.builtin_module_names)
    return [m.name for m in pkgutil.iter_modules(getattr(obj, "__path__", []) or [])]


def refuse_unknown_arguments(where: str, part: str, options: Mapping[str, Any], supplied: Sequence[str],
                             supplier: str) -> None:
    """Check a ``_target_`` block before it is built: every setting is one the callable takes.

    A part (an examiner, an architecture) is a class or function named by ``options["_target_"]``;
    its settings are the block's other keys (those starting with ``_`` are Hydra's), and the caller
    (``supplier``, e.g. "the audit") gives it ``supplied`` keyword arguments at build time.

    Args:
        where: the block's dotted config path, for messages (``examiner``, ``model.arch``).
        part: what the callable is, for messages (``examiner``, ``architecture``).
        options: the block as plain data, ``_target_`` included.
        supplied: keyword arguments the caller passes; the callable must take them, the config must not set them
            (none: every argument is a setting).
        supplier: who passes them, for messages.

    Raises:
        AdvauditError: one line: the callable cannot be imported, a setting is one the caller supplies,
            the callable does not take a supplied argument, or a setting it does not take (with the
            closest one it does).
    """
    target = str(options["_target_"])
    parameters = inspect.signature(named_object(target, where)).parameters
    given = ", ".join(supplied)
    settings = [str(key) for key in options if not str(key).startswith("_")]
    clash = [key for key in settings if key in supplied]
    require(not clash, f"{where}.{clash[0] if clash else ''} is supplied by {supplier} (it gives every "
            f"{part} {given}); remove it from the {part}'s config")
    missing = [key for key in supplied if key not in parameters]
    article = "an" if part[:1] in "aeiou" else "a"
    require(not missing, f"{target} does not take {', '.join(missing)}; {article} {part}'s constructor takes the "
            f"arguments {supplier} supplies ({given}) besides its own settings")
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return  # it takes its settings as **settings and types them itself (its settings dataclass)
    accepted = [name for name, p in parameters.items() if name != "self" and name not in supplied
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [key for key in settings if key not in accepted]
    supplies = f"; {supplier} supplies {given}" if supplied else ""
    require(not unknown, unknown_keys_message(where, unknown, accepted) + f" ({target} takes these settings{supplies})")
