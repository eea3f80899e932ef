"""Pieces every audit needs: the target under audit, its data, its device."""

from __future__ import annotations

from typing import Any, Mapping

from hydra.utils import instantiate
from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.data.base import ArrayDataModule
from advaudit.errors import AdvauditError, require, warn
from advaudit.models import Target
from advaudit.models.imported.spec import OTHER_CLASS
from advaudit.models.imported.store import load_any_target
from advaudit.runtime import resolve_device


#: the only code a target file's stored dataset config may name (anything else comes from the user's config)
SAFE_STORED_DATASETS = ("advaudit.data.",)


def load_audit_target(cfg: DictConfig) -> Target:
    """Load ``cfg.target`` onto ``cfg.device``: a target file (advaudit's own or imported) or a target block
    (:mod:`advaudit.models.imported`), with a clear error if unset."""
    value = cfg.get("target")
    require(value is not None, "no target given; add target=<path/to/target.pt> (written by train.py "
            "under <run dir>/checkpoints/, or by `advaudit import`) or a target block (README: Audit a model you "
            "already have)")
    device = resolve_device(cfg.get("device", "auto"))
    return load_any_target(value, device=str(device), seed=int(cfg.get("seed", 0)))


def target_datamodule(target: Target, override: Any = None) -> ArrayDataModule:
    """The dataset ``target`` was trained on (from its checkpoint), or ``override`` when given; set up.

    ``override`` is ``audit.dataset``: a dataset config block (``_target_`` to an
    :class:`ArrayDataModule` and its settings, as ``+dataset@audit.dataset=<name>`` puts one there).
    Its classes must be the target's, in the target's order (``classes`` selects and orders them;
    a class map's "other" output needs no items).
    The stored config is rebuilt as it was: test-time shifts stay as they were at training time
    unless overridden.

    Raises:
        AdvauditError: when the override is not a dataset config or its classes are not the target's.
    """
    if override is None:
        stored: Any = target.meta.get("config", {}).get("dataset")
        require(stored is not None, "this checkpoint does not record its dataset; pass audit.dataset=<config> "
                "(e.g. +dataset@audit.dataset=fashion_mnist)")
        named = str(stored.get("_target_", "")) if isinstance(stored, Mapping) else ""
        from_config = bool(getattr(target, "dataset_from_config", False))  # a target block's `dataset`
        require(from_config or named.startswith(SAFE_STORED_DATASETS), f"the target file names its dataset as "
                f"{named or stored!r}; a "
                "file never makes advaudit import code, so only advaudit's own datasets are built from it: pass the "
                "dataset in your config, audit.dataset={_target_: ...} (or +dataset@audit.dataset=<name>)")
        datamodule = instantiate(OmegaConf.create(stored))
        datamodule.setup()
        return datamodule
    datamodule = _override_datamodule(override)
    datamodule.setup()
    # a class map's "any other output" comes last and has no items of its own
    _require_target_classes(datamodule.class_names, [c for c in target.class_names if c != OTHER_CLASS])
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


def _require_target_classes(classes: list[str], target_classes: list[str]) -> None:
    """Labels index the target's outputs: the override has the target's classes in its order.

    Another number of classes, or the target's classes in another order, is refused; the same number
    under other names (``ankle-boot`` for ``boot``) is compared by index, with a warning naming them.
    """
    classes, target_classes = [str(c) for c in classes], [str(c) for c in target_classes]
    if classes == target_classes:
        return
    if set(target_classes) <= set(classes):
        raise AdvauditError(f"audit.dataset has classes {classes} but the target predicts {target_classes}; keep "
                            f"the target's classes in its order with audit.dataset.classes=[{', '.join(target_classes)}]")
    require(len(classes) == len(target_classes), f"audit.dataset has {len(classes)} classes {classes} but the "
            f"target predicts {len(target_classes)} {target_classes}; give a dataset with the target's classes "
            "(audit.dataset.classes=[...] keeps some and orders them)")
    renamed = [f"{c} as {t}" for c, t in zip(classes, target_classes) if c != t]
    warn(f"audit.dataset names its classes differently from the target; compared by index: {', '.join(renamed)}")


def _shown(value: Any) -> str:
    if isinstance(value, (DictConfig, ListConfig)):
        return str(OmegaConf.to_container(value, resolve=False))
    return repr(value)
