"""Pickles: whole pickled torch modules (``torch.save(model)``), pickle and joblib files.

Detected from the classes the pickle would import (opcodes only, nothing run). Unpickling runs code
the file names, so they load only with ``target.trusted: true``, with a warning naming those classes;
the advaudit target file ``advaudit import`` writes stores them code-free (``torch.export``,
TorchScript or skops).
"""

from __future__ import annotations

import logging
import pickle
import pickletools
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from advaudit.errors import require
from advaudit.models.targets.formats.probe import CODE_PREFIXES, FileKind, Probe, audit_advice, main_class, pickle_globals
from advaudit.models.targets.formats.skops import sklearn_predict

log = logging.getLogger(__name__)

_TRUSTED_ONLY = "target={{path: {p}, trusted: true, {common}}} only if you trust the file (unpickling runs code); "
HINTS = {"pickled_module": _TRUSTED_ONLY + "better, save model.state_dict() or torch.jit.script/torch.export it",
         "pickle": _TRUSTED_ONLY + "better, save a scikit-learn model with skops.io.dump",
         "joblib": _TRUSTED_ONLY + "better, save it with skops.io.dump"}


def detect(probe: Probe) -> FileKind | None:
    """A torch zip whose pickle names code, or a raw pickle / joblib file (by its first byte or its name)."""
    if probe.names is not None:
        code = probe.code_classes
        if not code:
            return None
        owner = main_class(code)
        if any(c.startswith(CODE_PREFIXES) for c in code):
            return FileKind("pickled_module", f"a whole pickled module ({owner or code[0]}; torch.save(model)) that "
                            "needs code to unpickle", code)
        return FileKind("pickle", f"a torch file that needs code to unpickle ({', '.join(code[:3])})", code)
    if probe.head[:1] == b"\x80" or probe.suffix in (".joblib", ".pkl", ".pickle"):
        data = probe.path.read_bytes() if probe.head[:1] == b"\x80" else b""
        classes = pickle_globals(data)
        kind = "joblib" if probe.suffix == ".joblib" else "pickle"
        owner = main_class(classes)
        return FileKind(kind, f"a {kind} file" + (f" of a {owner}" if owner else ""), classes, _pickled_int(data))
    return None


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[nn.Module | None, Callable | None]:
    """The pickled module, or the pickled estimator's ``predict_proba``; refused unless ``spec.trusted``."""
    require(spec.trusted, f"refusing to unpickle {path}: it is {kind.detail}, and unpickling runs code the file "
            "names; if you trust the file add target.trusted=true (recorded in the report), or "
            + audit_advice(path, kind, HINTS[kind.kind]).replace("audit it with ",
                                                                 "audit it safely by saving it another way: "))
    obj = _unpickle_trusted(path, kind)
    if isinstance(obj, nn.Module):
        return obj.eval(), None
    require(hasattr(obj, "predict_proba"), f"{path} holds a {type(obj).__name__}, which has neither forward nor "
            "predict_proba; save a classifier")
    return None, sklearn_predict(obj)


def _unpickle_trusted(path: Path, kind: FileKind) -> Any:
    log.warning("unpickling %s because target.trusted=true: this runs code the file names (%s)", path,
                ", ".join(kind.classes[:5]) or "unknown")
    if kind.kind == "pickled_module":
        return torch.load(path, map_location="cpu", weights_only=False)
    if kind.kind == "joblib":
        import joblib  # joblib brings its process pools along; only a trusted joblib file needs it

        return joblib.load(path)
    with open(path, "rb") as handle:
        return pickle.load(handle)


def _pickled_int(data: bytes, name: str = "n_features_in_") -> int | None:
    """The int a pickle stores under the attribute ``name`` (opcodes only, nothing run); ``None`` if not seen."""
    after_name = False
    try:
        for op, arg, _ in pickletools.genops(data):
            if after_name and op.name in ("BININT", "BININT1", "BININT2", "INT", "LONG1", "LONG"):
                return int(arg) if int(arg) > 0 else None
            after_name = op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8") and arg == name \
                or (after_name and op.name in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"))
    except Exception:  # noqa: BLE001 - truncated, compressed or raw array bytes (joblib): what was seen
        pass
    return None
