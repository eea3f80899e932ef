"""Configs checked before any work: structured-config schemas and one validation step.

:func:`register_configs` puts the schemas of :mod:`advaudit.config.schemas` in Hydra's ConfigStore
(the YAML options name them in their ``defaults:``); it runs when this package is imported, which
``train.py``, ``examine.py`` and the tests do before composing. :func:`validate` checks the rules
that relate several keys, once, before a task starts; :func:`typed` gives a part its settings as
its schema's object.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from advaudit.config.schemas import SCHEMAS, report_budgets_within
from advaudit.config.validation import plain_config, validate
from advaudit.errors import AdvauditError

__all__ = ["register_configs", "validate", "plain_config", "typed"]

T = TypeVar("T")


def typed(schema: type[T], node: Any) -> T:
    """``node`` (a config mapping, a plain dict or None) as a ``schema`` object (``OmegaConf.to_object``).

    Keys ``node`` leaves out take the schema's defaults; the object's own checks run
    (:class:`advaudit.config.ranges.Ranged`).

    Raises:
        AdvauditError: one line for a key the schema does not have or a value of the wrong type.
    """
    if isinstance(node, schema):
        return node
    where = getattr(schema, "config_path", schema.__name__)
    values = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node or {})
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), values))  # type: ignore[return-value]
    except OmegaConfBaseException as error:
        raise AdvauditError(f"{where}: {str(error).splitlines()[0]}") from None


def register_configs() -> None:
    """Store every schema under its group (``audit/worst_case_schema``, ...) and register the resolvers schema
    defaults use; idempotent."""
    if not OmegaConf.has_resolver("report_budgets_within"):
        OmegaConf.register_new_resolver("report_budgets_within", report_budgets_within)
    store = ConfigStore.instance()
    for group, name, node in SCHEMAS:
        store.store(group=group, name=name, node=node)


register_configs()
