"""Saving and loading targets: a checkpoint file alone rebuilds a ready-to-use target."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from advaudit.errors import AdvauditError
from advaudit.models.checkpoint import (estimator_to_state, load_checkpoint, save_checkpoint,
                                        state_to_estimator)
from advaudit.models.imported.build import target_from_payload
from advaudit.models.imported.verify import probe_batch, require_same_model
from advaudit.models.imported.weights import load_weights
from advaudit.models.nets import build_net, checkpoint_architecture

IMPORTED_BACKENDS = ("export", "torchscript", "onnx", "skops")  # written by `advaudit import`
from advaudit.models.target import SklearnTarget, TorchTarget

Target = TorchTarget | SklearnTarget


def save_target(target: Target, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
    """Write ``target`` (weights or estimator state, meta, temperature) plus ``extra`` plain data.

    A torch target is read back and its logits compared with ``target``'s on a probe batch: the file
    stores weights for the architecture ``meta["arch"]`` names (a ``_target_``), and a network of another
    make whose parameter names happen to match (torchvision's ResNet-18 under advaudit's
    ``resnet18``) would otherwise be audited as advaudit's own. Such a file is removed and refused,
    naming the gap. The architecture is the one ``target`` was built with, so reading it back may
    import it.
    """
    if isinstance(target, TorchTarget):
        body = {"backend": "torch", "state_dict": {k: v.detach().cpu() for k, v in target.state_dict().items()},
                "temperature": float(target.temperature)}
    else:
        body = {"backend": "sklearn", "estimator": estimator_to_state(target.estimator), "temperature": 1.0}
    path = save_checkpoint(path, {"kind": "target", "meta": target.meta, **body, **(extra or {})})
    if isinstance(target, TorchTarget):
        _require_rebuilt_equal(target, path)
    return path


def _require_rebuilt_equal(target: TorchTarget, path: Path) -> None:
    """Refuse (and remove) a saved target whose rebuilt network's logits differ from ``target``'s."""
    was_training = target.training
    target.eval()
    try:
        rebuilt = load_target(path, map_location=str(target.device), channels_last=False,
                              architectures=[str(target.meta.get("arch"))])
        require_same_model(target, rebuilt, probe_batch(target.input_shape), 1e-4,
                           f"the network {path.name} rebuilds ({target.meta.get('arch')} "
                           f"{target.meta.get('arch_params', {})})")
    except AdvauditError as error:
        path.unlink(missing_ok=True)
        raise AdvauditError(f"{error}; save_target stores weights for the architecture meta['arch'] names, rebuilt "
                            "from meta['arch_params']: audit a model built otherwise with a target block or "
                            "`advaudit import` (README: Audit a model you already have)") from None
    finally:
        target.train(was_training)


def load_target(path: str | Path, map_location: str = "cpu", channels_last: bool = True,
                trusted_types: list[str] | None = None, architectures: Sequence[str] = ()) -> Target:
    """Rebuild the target stored at ``path`` (safe loading), in eval mode on ``map_location``.

    ``channels_last``: image targets on a CPU keep their weights NHWC (faster convolutions, logits
    equal to float rounding: :meth:`TorchTarget.use_channels_last`); ``False`` keeps NCHW.
    Files written by ``advaudit import`` hold a code-free program (:mod:`advaudit.models.imported.store`);
    ``trusted_types`` are the scikit-learn types the user trusts beyond skops' defaults.
    ``architectures`` are the architectures outside advaudit (``_target_`` paths) the user's config
    names (``target.architecture``); a file trained with another one is refused
    (:func:`advaudit.models.nets.checkpoint_architecture`).
    """
    payload = load_checkpoint(path, kind="target", map_location=map_location)
    meta = require_meta(payload, path, ("class_names", "input_shape", "normalization", "arch"))
    if payload.get("backend") in IMPORTED_BACKENDS:
        return target_from_payload(payload, map_location, trusted_types, channels_last)
    if payload.get("backend") == "sklearn":
        return SklearnTarget(state_to_estimator(payload["estimator"]), meta)
    arch, params = checkpoint_architecture(meta, str(path), architectures)
    net = build_net(arch, meta["input_shape"], len(meta["class_names"]), **params)
    target = TorchTarget(net, meta, payload.get("temperature", 1.0))
    try:
        load_weights(target, payload["state_dict"], str(path))
    except AdvauditError as error:
        raise AdvauditError(f"weights in {path} do not match architecture {meta['arch']!r} "
                            f"{params}: {str(error).split(': ', 1)[1]}") from None
    target = target.to(map_location).eval()
    return target.use_channels_last() if channels_last else target


def require_meta(payload: dict[str, Any], path: str | Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """The checkpoint's ``meta``, refusing one that lacks what rebuilding the model needs."""
    meta = payload.get("meta")
    missing = [k for k in keys if not isinstance(meta, dict) or k not in meta]
    weights = {"sklearn": "estimator", **{b: "program" for b in IMPORTED_BACKENDS}}.get(payload.get("backend"), "state_dict")
    if weights not in payload:
        missing.append(weights)
    if missing:
        raise AdvauditError(f"{path} is a {payload.get('kind')!r} checkpoint without {missing} (truncated or "
                            "written by another tool); re-export it with train.py")
    return meta
