"""The one checkpoint format: plain data and tensors, loaded with ``weights_only=True``.

Every advaudit checkpoint is a dict with ``format = "advaudit"``, a ``version``, a ``kind``
(``"target"``, ``"generator"``, ...) and whatever that kind needs, as plain Python data and tensors
only. Loading never unpickles code: files that need it are refused with a clear message, so it is
safe to audit models you did not train.
"""

from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from advaudit.errors import AdvauditError
from advaudit.files import describe_path, sniff
from advaudit.models.imported.formats import FileKind, how_to_audit, identify, payload_kind

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

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
    found = identify(path, load_tensors=False)
    if found.kind not in ("torch_tensors", "unknown", "pickle"):
        raise AdvauditError(f"{path} is {found.detail}, not an advaudit checkpoint; {_advice(path, found, kind)}")
    content = sniff(path)
    if content.startswith("a text file") or content.endswith("image") or content.startswith("a binary"):
        raise AdvauditError(f"{path} is {content}, not a checkpoint; expected {expected}")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        raise AdvauditError(f"refusing to load {path}: it is {found.detail} and needs code to unpickle "
                            f"({_first_line(error)}); {_advice(path, found, kind)}") from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, OSError, KeyError) as error:
        raise AdvauditError(f"{path} is {content} that torch cannot read: truncated or corrupt "
                            f"({_first_line(error)}); expected {expected}: re-export it with train.py") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        held = payload_kind(payload)
        raise AdvauditError(f"{path} is {held.detail}, not an advaudit checkpoint; {_advice(path, held, kind)}")
    if kind is not None and payload.get("kind") != kind:
        found = payload.get("kind")
        hint = f"; pass it as {_PASS_AS[found]}" if found in _PASS_AS else ""
        raise AdvauditError(f"{path} is a {found!r} checkpoint, but {expected} is needed here{hint}")
    return payload


def _advice(path: Path, found: FileKind, kind: str | None) -> str:
    """How to use a file that is not an advaudit checkpoint: the target block for a model file."""
    if kind in (None, "target"):
        return how_to_audit(path, found)
    return f"expected {_EXPECTED.get(kind, 'an advaudit checkpoint written by train.py')}"


def _first_line(error: BaseException) -> str:
    """The first line of an error's text, without terminal colour codes (torch's messages carry them)."""
    text = _ANSI.sub("", str(error)).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


# -- scikit-learn estimators as plain data --------------------------------------------------------
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
