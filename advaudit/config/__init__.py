"""Configs checked before any work: structured-config schemas and one validation step.

:func:`register_configs` puts the schemas of :mod:`advaudit.config.schemas` in Hydra's ConfigStore
(the YAML options name them in their ``defaults:``); it runs when this package is imported, which
``train.py``, ``examine.py`` and the tests do before composing. :func:`validate` checks the rules
that relate several keys, once, before a task starts.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from advaudit.config.schemas import SCHEMAS
from advaudit.config.validation import plain_config, validate

__all__ = ["register_configs", "validate", "plain_config"]


def register_configs() -> None:
    """Store every schema under its group (``audit/worst_case_schema``, ...); idempotent."""
    store = ConfigStore.instance()
    for group, name, node in SCHEMAS:
        store.store(group=group, name=name, node=node)


register_configs()
