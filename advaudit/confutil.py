"""Small helpers for OmegaConf nodes."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


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
