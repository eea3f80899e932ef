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
from advaudit.files import describe_path, sniff

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


_EXPECTED = {"target": "a classifier target.pt written by train.py",
             "generator": "a generator.pt written by train.py model=generator"}
_PASS_AS = {"target": "target=<path>", "generator": "generator=<path>"}


def load_checkpoint(path: str | Path, kind: str | None = None, map_location: str = "cpu") -> dict[str, Any]:
    """Safely load an advaudit checkpoint, checking what the file is and its ``kind`` when given.

    The file is identified before it is trusted; each of these gets a message saying what the
    file is and what was expected: a missing path, a directory, an empty or truncated file, a text
    file, a pickle that needs code to load (refused), a plain ``state_dict``, a Lightning ``.ckpt``,
    and an advaudit checkpoint of another kind (a generator where a target is needed, or the reverse).

    Raises:
        AdvauditError: for each case above.
    """
    path = Path(path)
    expected = _EXPECTED.get(kind or "", "an advaudit checkpoint written by train.py")
    what = describe_path(path)
    if what != "a file":
        raise AdvauditError(f"checkpoint {path} is {what}; expected {expected} (see the training run's "
                            "result.json: checkpoint)")
    content = sniff(path)
    if content.startswith("a text file") or content.endswith("image") or content.startswith("a binary"):
        raise AdvauditError(f"{path} is {content}, not a checkpoint; expected {expected}")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise AdvauditError(f"refusing to load {path}: it needs code to unpickle ({_first_line(error)}); "
                            f"only advaudit checkpoints (plain data + tensors) are loaded; expected {expected}") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError, KeyError) as error:
        raise AdvauditError(f"{path} is {content} that torch cannot read: truncated or corrupt "
                            f"({_first_line(error)}); expected {expected}: re-export it with train.py") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise AdvauditError(f"{path} is {_describe_payload(payload)}, not an advaudit checkpoint; expected "
                            f"{expected}")
    if kind is not None and payload.get("kind") != kind:
        found = payload.get("kind")
        hint = f"; pass it as {_PASS_AS[found]}" if found in _PASS_AS else ""
        raise AdvauditError(f"{path} is a {found!r} checkpoint, but {expected} is needed here{hint}")
    return payload


def _describe_payload(payload: Any) -> str:
    """What a loaded torch file holds, in words (for files that are not advaudit checkpoints)."""
    if isinstance(payload, torch.Tensor):
        return f"a single tensor of shape {list(payload.shape)}"
    if not isinstance(payload, dict):
        return f"a torch file holding a {type(payload).__name__}"
    if "pytorch-lightning_version" in payload or {"state_dict", "global_step"} <= set(payload):
        return ("a Lightning training checkpoint (.ckpt); pass the target.pt that train.py wrote next to it "
                "in <run dir>/checkpoints/")
    if payload and all(isinstance(v, torch.Tensor) for v in payload.values()):
        first = next(iter(payload))
        return (f"a plain state_dict ({len(payload)} tensors, e.g. {first!r}) without the architecture, classes "
                "and normalisation an audit needs; save the model with advaudit.models.save_target")
    return f"a dict with keys {sorted(map(str, payload))[:6]}"


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
