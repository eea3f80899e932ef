"""The one checkpoint format: plain data and tensors, loaded with ``weights_only=True``.

Every advaudit checkpoint is a dict with ``format = "advaudit"``, a ``version``, a ``kind``
(``"target"``, ``"generator"``, ...) and whatever that kind needs, as plain Python data and tensors
only. Loading never unpickles code: files that need it are refused with a clear message, so it is
safe to audit models you did not train.
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from advaudit.errors import AdvauditError

FORMAT = "advaudit"
VERSION = 1


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (must contain ``kind``) atomically to ``path``; returns the path."""
    if "kind" not in payload:
        raise ValueError("checkpoint payload needs a 'kind'")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save({"format": FORMAT, "version": VERSION, **payload}, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(path: str | Path, kind: str | None = None, map_location: str = "cpu") -> dict[str, Any]:
    """Safely load an advaudit checkpoint, checking its ``kind`` when given.

    Raises:
        AdvauditError: missing file, corrupt file, a pickle that needs code to load (refused),
            a file that is not an advaudit checkpoint, or one of another kind.
    """
    path = Path(path)
    if not path.is_file():
        raise AdvauditError(f"checkpoint {path} does not exist; pass the path of a file written by "
                            "train.py (see the run's result.json: checkpoint)")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise AdvauditError(f"refusing to load {path}: it needs code to unpickle ({_first_line(error)}); "
                            "only advaudit checkpoints (plain data + tensors) are loaded") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError) as error:
        raise AdvauditError(f"checkpoint {path} is corrupt or not a torch file ({_first_line(error)}); "
                            "re-export it with train.py") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        hint = " (a Lightning .ckpt? pass the target.pt next to it)" if isinstance(payload, dict) else ""
        raise AdvauditError(f"{path} is not an advaudit checkpoint{hint}")
    if kind is not None and payload.get("kind") != kind:
        raise AdvauditError(f"{path} is a {payload.get('kind')!r} checkpoint, but a {kind!r} is needed here")
    return payload


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__


# -- scikit-learn estimators as plain data --------------------------------------------------------
def _allowed_estimators() -> dict[str, type]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    return {"SVC": SVC, "LogisticRegression": LogisticRegression}


def estimator_to_state(estimator: Any) -> dict[str, Any]:
    """A fitted estimator's attributes as plain data + tensors (numpy arrays become tensors)."""
    name = type(estimator).__name__
    if name not in _allowed_estimators():
        raise AdvauditError(f"cannot store a {name}; supported black boxes: {sorted(_allowed_estimators())}")
    return {"class": name, "attributes": {k: _encode(v) for k, v in vars(estimator).items()}}


def state_to_estimator(state: dict[str, Any]) -> Any:
    """Rebuild an estimator stored by :func:`estimator_to_state` (whitelisted classes only)."""
    classes = _allowed_estimators()
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
