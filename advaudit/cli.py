"""Shared pieces of the ``@hydra.main`` shims: user errors as one line, the sweep metric."""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

from omegaconf import DictConfig

from advaudit.errors import AdvauditError

log = logging.getLogger("advaudit")


def run_task(task: Callable[[DictConfig], dict[str, Any]], cfg: DictConfig, metric: str | None) -> float | None:
    """Run ``task``; an :class:`AdvauditError` ends the process with its one-line message (exit 2).

    Returns ``result[metric]`` as a float for sweepers (``None`` when absent).
    """
    try:
        result = task(cfg)
    except AdvauditError as error:
        log.error("error: %s", error)
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    value = result.get(metric) if metric else None
    return float(value) if isinstance(value, (int, float)) else None
