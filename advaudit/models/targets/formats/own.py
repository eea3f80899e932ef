"""advaudit's own target file (``target.pt``): one format among the others, describing itself.

An advaudit checkpoint (:mod:`advaudit.models.targets.formats.checkpoint`: plain data and tensors, loaded with
``weights_only=True``) of kind ``"target"`` holds ``meta`` (class names, input shape, normalisation,
architecture) and one body, named by ``backend``:

- ``torch``: a ``state_dict`` for the architecture ``meta["arch"]`` names (``train.py``'s targets);
- ``sklearn``: a whitelisted scikit-learn estimator as plain data (:func:`estimator_to_state`);
- a program written by ``advaudit import``: the bytes of another format (``torch.export``, TorchScript,
  ONNX, skops) under ``program``, rebuilt by that format's module, running no code it names.

This module detects the file (:func:`detect_payload`), rebuilds the ``torch`` and ``sklearn`` bodies
(:func:`rebuild`) and writes them (:func:`to_payload`); :mod:`advaudit.models.targets.io` reads and writes the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from advaudit.errors import AdvauditError
from advaudit.models.targets.formats.probe import FileKind
from advaudit.models.targets.formats.weights import load_weights
from advaudit.models.nets import build_net, checkpoint_architecture
from advaudit.models.targets.target import SklearnTarget, TorchTarget

#: what a target file of this format needs in ``meta`` to be rebuilt
META_KEYS = ("class_names", "input_shape", "normalization", "arch")
HINTS: dict[str, str | None] = {"advaudit": None}  # a target file needs no block: target=<path> audits it


def detect_payload(payload: object) -> FileKind | None:
    """An advaudit checkpoint (of any kind: a target, a generator, ...)."""
    if isinstance(payload, dict) and payload.get("format") == "advaudit":
        return FileKind("advaudit", f"an advaudit {payload.get('kind')!r} checkpoint")
    return None


def require_meta(payload: dict[str, Any], path: str | Path, keys: tuple[str, ...],
                 program_backends: Sequence[str] = ()) -> dict[str, Any]:
    """The checkpoint's ``meta``, refusing one that lacks what rebuilding the model needs (``program_backends``:
    the backends whose body is a ``program``)."""
    meta = payload.get("meta")
    missing = [k for k in keys if not isinstance(meta, dict) or k not in meta]
    weights = {"sklearn": "estimator", **{b: "program" for b in program_backends}}.get(payload.get("backend"), "state_dict")
    if weights not in payload:
        missing.append(weights)
    if missing:
        raise AdvauditError(f"{path} is a {payload.get('kind')!r} checkpoint without {missing} (truncated or "
                            "written by another tool); re-export it with train.py")
    return meta


def rebuild(payload: dict[str, Any], path: str | Path, map_location: str = "cpu", channels_last: bool = True,
            architectures: Sequence[str] = ()) -> TorchTarget | SklearnTarget:
    """The target a ``torch`` or ``sklearn`` body holds, in eval mode on ``map_location`` (see
    :func:`advaudit.models.targets.io.load_target` for ``channels_last`` and ``architectures``)."""
    meta = payload["meta"]
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


def to_payload(target: TorchTarget | SklearnTarget, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The checkpoint payload of ``target`` (weights or estimator state, meta, temperature) plus ``extra``."""
    if isinstance(target, TorchTarget):
        body = {"backend": "torch", "state_dict": {k: v.detach().cpu() for k, v in target.state_dict().items()},
                "temperature": float(target.temperature)}
    else:
        body = {"backend": "sklearn", "estimator": estimator_to_state(target.estimator), "temperature": 1.0}
    return {"kind": "target", "meta": target.meta, **body, **(extra or {})}


# -- the sklearn body: scikit-learn estimators as plain data ---------------------------------------
def storable_estimators() -> dict[str, type]:
    """The scikit-learn classes a target file may hold, by class name (rebuilt from plain data)."""
    from sklearn.linear_model import LogisticRegression  # scikit-learn is slow to import; only this path needs it
    from sklearn.svm import SVC

    return {"SVC": SVC, "LogisticRegression": LogisticRegression}


def estimator_to_state(estimator: Any) -> dict[str, Any]:
    """A fitted estimator's attributes as plain data + tensors (numpy arrays become tensors)."""
    name = type(estimator).__name__
    if name not in storable_estimators():
        raise AdvauditError(f"cannot store a {name}; supported black boxes: {sorted(storable_estimators())}")
    return {"class": name, "attributes": {k: _encode(v) for k, v in vars(estimator).items()}}


def state_to_estimator(state: dict[str, Any]) -> Any:
    """Rebuild an estimator stored by :func:`estimator_to_state` (whitelisted classes only)."""
    classes = storable_estimators()
    if state.get("class") not in classes:
        raise AdvauditError(f"checkpoint holds an unsupported estimator {state.get('class')!r}")
    cls = classes[state["class"]]
    estimator = cls.__new__(cls)
    estimator.__dict__.update({k: _decode(v) for k, v in state["attributes"].items()})
    return estimator


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"__list__": [_encode(v) for v in value.tolist()]}
        return {"__ndarray__": torch.from_numpy(np.ascontiguousarray(value))}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return {"__tuple__" if isinstance(value, tuple) else "__list__": [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"__dict__": {k: _encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise AdvauditError(f"cannot store estimator attribute of type {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return value["__ndarray__"].numpy()
        if "__list__" in value:
            return [_decode(v) for v in value["__list__"]]
        if "__tuple__" in value:
            return tuple(_decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: _decode(v) for k, v in value["__dict__"].items()}
    return value
