"""Pieces every audit needs: the target under audit, its data, its device."""

from __future__ import annotations

from typing import Any, Mapping

from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.data.base import ArrayDataModule
from advaudit.errors import AdvauditError, require
from advaudit.models import Target
from advaudit.models.targets.classes import align_target
from advaudit.models import load_target
from advaudit.models.targets.precision import configure_target, device_problem
from advaudit.runtime import resolve_device


#: the only code a target file's stored dataset config may name (anything else comes from the user's config)
SAFE_STORED_DATASETS = ("advaudit.data.",)


def load_audit_target(cfg: DictConfig) -> Target:
    """Load ``cfg.target`` onto ``cfg.device`` in ``cfg.precision`` (:mod:`advaudit.models.targets.precision`): a target
    file (advaudit's own or imported) or a target block (:mod:`advaudit.models.targets.imported`); a clear error if unset."""
    value = cfg.get("target")
    require(value is not None, "no target given; add target=<path/to/target.pt> (written by train.py "
            "under <run dir>/checkpoints/, or by `advaudit import`) or a target block (README: Audit a model you "
            "already have)")
    precision = cfg.get("precision", "32")
    problem = device_problem(cfg.get("device", "auto"), precision)
    require(problem is None, problem or "")
    device = resolve_device(cfg.get("device", "auto"))
    target = load_target(value, device=str(device), seed=int(cfg.get("seed", 0)))
    return configure_target(target, precision)


def target_datamodule(target: Target, override: Any = None) -> ArrayDataModule:
    """The dataset ``target`` was trained on (from its checkpoint), or ``override`` when given; set up.

    ``override`` is ``audit.dataset``: a dataset config block (``_target_`` to an
    :class:`ArrayDataModule` and its settings, as ``+dataset@audit.dataset=<name>`` puts one there).
    The target's classes are paired with the dataset's by name and its outputs put in the dataset's
    class order, in place (:func:`advaudit.models.targets.classes.align_target`; a class map's "other" output
    stays last and needs no items). The stored config is rebuilt as it was: test-time shifts stay as
    they were at training time unless overridden.

    Raises:
        AdvauditError: when the override is not a dataset config, or a class has no partner by name.
    """
    if override is None:
        stored: Any = target.meta.get("config", {}).get("dataset")
        example = ("+dataset@audit.dataset=tabular audit.dataset.name=<its table, e.g. wine>"
                   if len(target.input_shape) == 1 else "+dataset@audit.dataset=fashion_mnist")
        require(stored is not None, "this target does not record its dataset; give it in the target block "
                f"(target.dataset: <conf/dataset option>) or pass the audit's data ({example})")
        named = str(stored.get("_target_", "")) if isinstance(stored, Mapping) else ""
        from_config = bool(getattr(target, "dataset_from_config", False))  # a target block's `dataset`
        require(from_config or named.startswith(SAFE_STORED_DATASETS), f"the target file names its dataset as "
                f"{named or stored!r}; a "
                "file never makes advaudit import code, so only advaudit's own datasets are built from it: pass the "
                "dataset in your config, audit.dataset={_target_: ...} (or +dataset@audit.dataset=<name>)")
        datamodule = instantiate(OmegaConf.create(stored))
        datamodule.setup()
        align_target(target, datamodule.class_names, "the target's dataset")
        return datamodule
    datamodule = _override_datamodule(override)
    datamodule.setup()
    align_target(target, datamodule.class_names, "audit.dataset")
    return datamodule


def _override_datamodule(override: Any) -> ArrayDataModule:
    """``audit.dataset`` built into a datamodule (not yet set up), or a one-line refusal."""
    if isinstance(override, str):
        raise AdvauditError(f"audit.dataset={override} names no dataset config; to audit on conf/dataset/"
                            f"{override}.yaml write +dataset@audit.dataset={override} (then "
                            "audit.dataset.<key>=<value> changes its settings)")
    require(isinstance(override, (DictConfig, Mapping)) and "_target_" in override,
            f"audit.dataset={_shown(override)} is not a dataset config; give a block with _target_ (e.g. "
            "audit.dataset={_target_: advaudit.data.fashion_mnist.FashionMNISTDataModule}) or "
            "+dataset@audit.dataset=<name of a conf/dataset option>")
    node = override if isinstance(override, DictConfig) else OmegaConf.create(dict(override))
    datamodule = instantiate(node)
    require(isinstance(datamodule, ArrayDataModule), f"audit.dataset._target_={node._target_} builds a "
            f"{type(datamodule).__name__}, not a dataset; name a datamodule such as "
            "advaudit.data.fashion_mnist.FashionMNISTDataModule")
    return datamodule


def _shown(value: Any) -> str:
    if isinstance(value, (DictConfig, ListConfig)):
        return str(OmegaConf.to_container(value, resolve=False))
    return repr(value)
