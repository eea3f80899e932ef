"""Saving and loading targets: a checkpoint file alone rebuilds a ready-to-use target."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from advaudit.errors import AdvauditError
from advaudit.models.checkpoint import (estimator_to_state, load_checkpoint, save_checkpoint,
                                        state_to_estimator)
from advaudit.models.nets import build_net
from advaudit.models.target import SklearnTarget, TorchTarget

if TYPE_CHECKING:
    from advaudit.models.generator import ConditionalGenerator

Target = TorchTarget | SklearnTarget


def save_target(target: Target, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """Write ``target`` (weights or estimator state, meta, temperature) plus ``extra`` plain data."""
    if isinstance(target, TorchTarget):
        body = {"backend": "torch", "state_dict": {k: v.detach().cpu() for k, v in target.state_dict().items()},
                "temperature": float(target.temperature)}
    else:
        body = {"backend": "sklearn", "estimator": estimator_to_state(target.estimator), "temperature": 1.0}
    return save_checkpoint(path, {"kind": "target", "meta": target.meta, **body, **(extra or {})})


def load_target(path: str | Path, map_location: str = "cpu", channels_last: bool = True) -> Target:
    """Rebuild the target stored at ``path`` (safe loading), in eval mode on ``map_location``.

    ``channels_last``: image targets on a CPU keep their weights NHWC (faster convolutions, logits
    equal to float rounding: :meth:`TorchTarget.use_channels_last`); ``False`` keeps NCHW.
    """
    payload = load_checkpoint(path, kind="target", map_location=map_location)
    meta = _require_meta(payload, path, ("class_names", "input_shape", "normalization", "arch"))
    if payload.get("backend") == "sklearn":
        return SklearnTarget(state_to_estimator(payload["estimator"]), meta)
    net = build_net(meta["arch"], meta["input_shape"], len(meta["class_names"]), **meta.get("arch_params", {}))
    target = TorchTarget(net, meta, payload.get("temperature", 1.0))
    try:
        target.load_state_dict(payload["state_dict"])
    except RuntimeError as error:
        raise AdvauditError(f"weights in {path} do not match architecture {meta['arch']!r} "
                            f"{meta.get('arch_params', {})}: {str(error).splitlines()[0]}") from None
    target = target.to(map_location).eval()
    return target.use_channels_last() if channels_last else target


def save_generator(generator: "ConditionalGenerator", meta: dict[str, Any], path: str | Path,
                   extra: dict[str, Any] | None = None) -> Path:
    """Write a generator checkpoint (weights + ``meta``: class names, image shape, latent dim, width)."""
    state = {k: v.detach().cpu() for k, v in generator.state_dict().items()}
    return save_checkpoint(path, {"kind": "generator", "meta": meta, "state_dict": state, **(extra or {})})


def load_generator(path: str | Path, map_location: str = "cpu") -> tuple["ConditionalGenerator", dict[str, Any]]:
    """Rebuild the generator stored at ``path`` (safe loading), in eval mode; returns it and its meta."""
    from advaudit.models.generator import ConditionalGenerator, architecture

    payload = load_checkpoint(path, kind="generator", map_location=map_location)
    meta = _require_meta(payload, path, ("class_names", "image_shape", "latent_dim", "width"))
    generator = ConditionalGenerator(len(meta["class_names"]), meta["image_shape"], **architecture(meta))
    try:
        generator.load_state_dict(payload["state_dict"])
    except RuntimeError as error:
        raise AdvauditError(f"weights in {path} do not match the generator described by its meta: "
                            f"{str(error).splitlines()[0]}") from None
    return generator.to(map_location).eval(), meta


def _require_meta(payload: dict[str, Any], path: str | Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The checkpoint's ``meta``, refusing one that lacks what rebuilding the model needs."""
    meta = payload.get("meta")
    missing = [k for k in keys if not isinstance(meta, dict) or k not in meta]
    weights = "state_dict" if payload.get("backend") != "sklearn" else "estimator"
    if weights not in payload:
        missing.append(weights)
    if missing:
        raise AdvauditError(f"{path} is a {payload.get('kind')!r} checkpoint without {missing} (truncated or "
                            "written by another tool); re-export it with train.py")
    return meta
