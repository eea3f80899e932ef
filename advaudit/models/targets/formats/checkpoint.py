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

import torch

from advaudit.errors import AdvauditError
from advaudit.files import describe_path, sniff
from advaudit.models.targets.formats import FileKind, how_to_audit, identify, payload_kind

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
