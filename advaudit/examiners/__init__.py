"""Sequential black-box optimisers over S, one per instance, batched: random, BO, RL, Optuna.

An examiner is plugged in as one class plus one YAML option of the ``examiner`` group whose
``_target_`` names the class (``_partial_: true``: the audit supplies the rest). Its settings are
the class's keyword arguments; the worst-case audit adds :data:`SUPPLIED` (``n_instances``,
``n_dims``, ``seed``, ``device``, ``periodic``), which every examiner takes. ``name`` labels the
examiner in reports and is not passed. A key the class does not take is refused, never dropped.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from hydra.core.config_store import ConfigStore
from hydra.utils import instantiate
from omegaconf import OmegaConf

from advaudit.confutil import plain, refuse_unknown_arguments
from advaudit.errors import require
from advaudit.examiners.protocol import Examiner
from advaudit.examiners.settings import LABELS, SUPPLIED

__all__ = ["Examiner", "build_examiner", "builtin_examiner", "LABELS", "SUPPLIED"]


def builtin_examiner(name: str, **options: Any) -> dict[str, Any]:
    """The config of advaudit's examiner ``name`` (its schema's defaults, ``_target_`` included) with
    ``options`` changed: what ``examiner=<name>`` composes to, for scripts and tests. The schemas are
    those :mod:`advaudit.registry` stored in Hydra's ConfigStore (group ``examiner``)."""
    store = ConfigStore.instance()
    nodes = [store.load(f"examiner/{entry}").node for entry in store.list("examiner") if entry.endswith("_schema.yaml")]
    schemas = {str(node.get("name")): node for node in nodes}
    require(name in schemas, f"unknown examiner {name!r}; use one of {sorted(schemas)} (or a block with _target_)")
    defaults = OmegaConf.to_container(schemas[name], enum_to_str=True)
    return {**defaults, **options}


def build_examiner(examiner_cfg: Any, n_instances: int, n_dims: int, seed: int = 0,
                   device: str | torch.device = "cpu", periodic: Sequence[bool] | None = None) -> Examiner:
    """The examiner ``cfg.examiner`` describes, for N instances x C dims.

    Args:
        examiner_cfg: a block with ``_target_`` (the examiner's class) and its settings; a block with
            only ``name`` (and settings) means advaudit's examiner of that name (:func:`builtin_examiner`).
        n_instances, n_dims: N and C.
        seed: the examination's seed.
        device: where the examiner runs (the target's device).
        periodic: ``[C]`` flags of the dims that are circles (the world's periodic factors).

    Raises:
        AdvauditError: one line naming a key the class does not take, with the ones it does.
    """
    options = dict(plain(examiner_cfg, {}))
    if "_target_" not in options:
        name = str(options.pop("name", None))
        options = builtin_examiner(name, **options)
    for key in LABELS:
        options.pop(key, None)
    target = str(options["_target_"])
    _refuse_unknown(target, options)
    options["_partial_"] = True
    make = instantiate(OmegaConf.create(options))
    return make(n_instances=n_instances, n_dims=n_dims, seed=seed, device=device,
                periodic=None if periodic is None else [bool(p) for p in periodic])


def _refuse_unknown(target: str, options: dict[str, Any]) -> None:
    """Every setting in ``options`` is a keyword argument of ``target``; none is one the audit supplies."""
    refuse_unknown_arguments("examiner", "examiner", {**options, "_target_": target}, SUPPLIED, "the audit")
