"""Small helpers for OmegaConf nodes."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


def plain(node: Any, default: Any = None) -> Any:
    """A config node as resolved plain Python data; ``default`` when the node is ``None``."""
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    return default if node is None else node
