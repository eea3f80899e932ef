"""Sequential black-box optimisers over S, one per instance, batched: random, BO, RL, Optuna."""

from __future__ import annotations

import importlib
from typing import Any, Sequence

import torch

from advaudit.confutil import plain
from advaudit.errors import AdvauditError
from advaudit.examiners.protocol import Examiner

__all__ = ["Examiner", "build_examiner", "EXAMINERS"]

EXAMINERS = {
    "random": "advaudit.examiners.random_search:RandomExaminer",
    "bo": "advaudit.examiners.bo:BOExaminer",
    "rl": "advaudit.examiners.rl:RLExaminer",
    "tpe": "advaudit.examiners.optuna_examiner:OptunaExaminer",
    "cmaes": "advaudit.examiners.optuna_examiner:OptunaExaminer",
}


def build_examiner(examiner_cfg: Any, n_instances: int, n_dims: int, seed: int = 0,
                   device: str | torch.device = "cpu", periodic: Sequence[bool] | None = None) -> Examiner:
    """An examiner from ``cfg.examiner`` (``name`` plus its options) for N instances x C dims;
    ``periodic`` flags the dims that are circles (the world's periodic factors; random search
    ignores it, uniform on an interval is uniform on the circle)."""
    options = dict(plain(examiner_cfg, {}))
    name = options.pop("name", None)
    options.pop("budget_note", None)
    if name not in EXAMINERS:
        raise AdvauditError(f"unknown examiner {name!r}; use one of {sorted(EXAMINERS)}")
    module, _, cls = EXAMINERS[name].partition(":")
    if name in ("tpe", "cmaes"):
        options["sampler"] = name
    return getattr(importlib.import_module(module), cls)(
        n_instances=n_instances, n_dims=n_dims, seed=seed, device=device,
        periodic=None if periodic is None else [bool(p) for p in periodic], **options)
