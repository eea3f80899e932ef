"""The built-in parts' settings, found beside the parts, stored in Hydra's ConfigStore.

Each part declares its settings as a dataclass mixing in :class:`advaudit.config.part.Part`, in the
package of the code it configures (``advaudit/<package>/settings.py``, or the part's own module):
:func:`settings_modules` finds every module of the part packages that declares one (by reading the
sources: nothing else is imported), :data:`SCHEMAS` lists them with the root configs, and
:func:`register_configs` stores each under its group (``examiner/bo_schema``, ...), which the YAML
options name in their ``defaults:``. The error-search methods are composed all together (the audit runs
``search.name`` and every method in ``audit.compare`` on the same pools): :func:`register_configs` also
stores ``search/methods``, whose defaults list every ``search/method`` option found (a method's option is
named as its schema less ``_schema``), and one ``search/<name>`` per method (``search=gad``: the methods,
with ``search.name=gad``). So a built-in world, examiner or scorer is one module plus one YAML. It runs
when this module is imported, which the entry points
(``train.py``, ``examine.py``, the CLI, the API) and the tests do before composing.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any, Sequence

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from advaudit.audits.settings import report_budgets_within
from advaudit.config import known_keys
from advaudit.config.part import Part, declaring_modules
from advaudit.config.roots import ExamineConf, PathsConf, TrainConf
from advaudit.examiners.settings import LABELS as EXAMINER_LABELS, SUPPLIED as EXAMINER_SUPPLIED
from advaudit.models.nets import SUPPLIED as ARCHITECTURE_SUPPLIED

__all__ = ["SCHEMAS", "PART_KEYS", "METHOD_GROUP", "method_options", "register_configs", "schema_of", "settings_modules",
           "unknown_key_problems", "unknown_argument_problems"]

#: the config group of the error-search methods, each YAML putting its block at ``search.<name>``
METHOD_GROUP = "search/method"
#: the packages whose parts have settings, below ``advaudit/``
PART_PACKAGES = ("audits", "examiners", "worlds", "search", "data", "models")
#: by dotted path, a part's block's labels (never passed) and the arguments its caller supplies (never
#: set in config): an examiner's ``name`` and the worst-case audit's arguments; training's to an architecture
PART_KEYS = {"examiner": (EXAMINER_LABELS, EXAMINER_SUPPLIED), "model.arch": ((), ARCHITECTURE_SUPPLIED)}


def settings_modules(root: Path = Path(__file__).parent) -> list[str]:
    """The modules of :data:`PART_PACKAGES` under ``root`` that declare a part's settings, sorted."""
    return sorted(name for package in PART_PACKAGES for name in declaring_modules(root / package))


def part_schemas(modules: Sequence[str]) -> list[tuple[str, str, type]]:
    """``(group, schema name, dataclass)`` of every part settings class declared in ``modules``."""
    found = []
    for name in modules:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, Part) and cls.__module__ == name and cls.__dict__.get("schema_name")):
                found.append((cls.config_group, str(cls.schema_name), cls))
    return sorted(found, key=lambda row: (row[0], row[1]))


#: (group, schema name, dataclass); ``group=None`` for the root configs
SCHEMAS: list[tuple[str | None, str, type]] = [
    (None, "train_schema", TrainConf), (None, "examine_schema", ExamineConf), ("paths", "paths_schema", PathsConf),
    *part_schemas(settings_modules())]


def _target_of(schema: type) -> str | None:
    """The callable a settings dataclass's block builds or calls: its ``_target_``, or its ``run`` /
    ``train`` function's (audits, models)."""
    defaults = OmegaConf.structured(schema)
    for key in ("_target_", "run._target_", "train._target_"):
        value = OmegaConf.select(defaults, key, default=None, throw_on_missing=False)
        if isinstance(value, str) and value != "???":
            return value
    return None


#: (group, callable) -> settings dataclass, for blocks that name a part's callable without its schema
_BY_TARGET = {(group, _target_of(schema)): schema for group, _, schema in SCHEMAS if group}


def schema_of(group: str, node: Any) -> type | None:
    """The settings dataclass of the block ``node`` of ``group``: its structured type where it was composed
    from one, else the one whose ``_target_`` (an audit's ``run``, a model's ``train``) it names; None for
    a part of the user's own without one."""
    if not isinstance(node, DictConfig):
        return None
    own = OmegaConf.get_type(node)
    if isinstance(own, type) and issubclass(own, Part):
        return own
    for key in ("_target_", "run._target_", "train._target_"):
        value = OmegaConf.select(node, key, default=None, throw_on_missing=False)
        if isinstance(value, str):
            return _BY_TARGET.get((group, value))
    return None


def method_options(schemas: Sequence[tuple[str | None, str, type]] = SCHEMAS) -> list[str]:
    """The built-in error-search methods: the ``search/method`` options named by their schemas, sorted."""
    names = [name for group, name, _ in schemas if group == METHOD_GROUP]
    assert all(name.endswith("_schema") for name in names), f"a method's schema is <option>_schema: {names}"
    return sorted(name.removesuffix("_schema") for name in names)


def register_configs() -> None:
    """Store every schema under its group, the methods' ``search/methods`` and ``search/<name>`` options, and
    register the resolvers schema defaults use; idempotent."""
    if not OmegaConf.has_resolver("report_budgets_within"):
        OmegaConf.register_new_resolver("report_budgets_within", report_budgets_within)
    store = ConfigStore.instance()
    for group, name, node in SCHEMAS:
        store.store(group=group, name=name, node=node)
    methods = method_options()
    store.store(group="search", name="methods", node={"defaults": [{"method": methods}, "_self_"]})
    for name in methods:  # search=<name>: every method's block, this one reported first
        store.store(group="search", name=name, node={"defaults": ["methods", "_self_"], "name": name})


def unknown_key_problems(cfg: DictConfig, task: str) -> list[str]:
    """:func:`advaudit.config.known_keys.unknown_key_problems` judged by :data:`SCHEMAS`."""
    return known_keys.unknown_key_problems(cfg, task, [schema for _, _, schema in SCHEMAS], PART_KEYS)


def unknown_argument_problems(cfg: DictConfig, task: str) -> list[str]:
    """:func:`advaudit.config.known_keys.unknown_argument_problems` judged by :data:`SCHEMAS`."""
    return known_keys.unknown_argument_problems(cfg, task, [schema for _, _, schema in SCHEMAS], PART_KEYS)


register_configs()
