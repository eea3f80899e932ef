"""What detection reads from a file, once, without running any of it: :class:`Probe` and :class:`FileKind`.

A :class:`Probe` holds a file's first bytes and, for a zip archive, its member names and the classes
its torch pickle (``data.pkl``) would import, read from the pickle's opcodes, never by unpickling.
Each format module's ``detect(probe)`` looks at it; a torch file of plain data and tensors is then
opened with ``weights_only=True`` and its content shown to each format's ``detect_payload``.
"""

from __future__ import annotations

import pickletools
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

#: classes a plain tensor pickle may name: anything else needs code to unpickle
TENSOR_GLOBALS = ("collections.OrderedDict", "torch._utils.", "torch.", "builtins.set", "__builtin__.set",
                  "_codecs.encode", "numpy.core.multiarray._reconstruct", "numpy.dtype", "numpy.ndarray")
#: class prefixes of whole pickled modules (torch.save(model))
CODE_PREFIXES = ("torch.nn.", "torchvision.", "timm.", "transformers.", "pytorch_lightning.", "lightning.")


@dataclass
class FileKind:
    """``kind``: one of ``advaudit``, ``state_dict``, ``lightning``, ``torchscript``, ``export``, ``onnx``,
    ``safetensors``, ``skops``, ``pickled_module``, ``pickle``, ``joblib``, ``torch_other`` or ``unknown``;
    ``classes``: the classes a pickle would import; ``detail``: what it is, in words; ``features``: a
    scikit-learn estimator's ``n_features_in_``, where the file shows it without running anything."""

    kind: str
    detail: str
    classes: list[str] = field(default_factory=list)
    features: int | None = None


class Probe:
    """A file as detection sees it: ``path``, ``head`` (its first 64 bytes) and, for a zip, ``names``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as handle:
            self.head = handle.read(64)
        self.names: list[str] | None = None
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                self.names = archive.namelist()

    @property
    def suffix(self) -> str:
        return self.path.suffix.lower()

    def member(self, name: str) -> bytes:
        """The bytes of the zip member ``name``."""
        with zipfile.ZipFile(self.path) as archive:
            return archive.read(name)

    @cached_property
    def torch_pickle(self) -> str | None:
        """The zip member holding a torch file's pickle (``<archive>/data.pkl``), or ``None``."""
        return next((n for n in self.names or [] if n.endswith("/data.pkl") or n == "data.pkl"), None)

    @cached_property
    def code_classes(self) -> list[str]:
        """The classes a torch file's pickle would import beyond plain tensors (empty: plain data)."""
        if self.torch_pickle is None:
            return []
        classes = pickle_globals(self.member(self.torch_pickle))
        return [c for c in classes if not c.startswith(TENSOR_GLOBALS) or c.startswith(CODE_PREFIXES)]


def pickle_globals(data: bytes) -> list[str]:
    """``module.qualname`` of every class or function a pickle would import (opcodes only, nothing run)."""
    found: list[str] = []
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
                strings.append(str(arg))
            elif op.name == "GLOBAL":
                found.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
    except Exception:  # noqa: BLE001 - truncated or compressed: report what was seen
        pass
    return list(dict.fromkeys(found))


def main_class(classes: list[str]) -> str | None:
    """The first class that is neither a tensor helper nor a ``torch.nn`` building block."""
    for name in classes:
        if not name.startswith(TENSOR_GLOBALS) and not name.startswith(("builtins.", "__builtin__.", "copyreg.")):
            return name
    return None


#: what :func:`audit_advice` says for a file no format can audit
NO_FORMAT = ("pass an advaudit target.pt (train.py, or `advaudit import`) or a target block (README: Audit a model "
             "you already have)")


def audit_advice(path: str | Path, kind: FileKind, template: str | None) -> str:
    """The exact ``target`` block that audits a file of ``kind``: a format's hint ``template`` (with ``{p}``
    the path and ``{common}`` the keys every block needs) filled in, or :data:`NO_FORMAT`."""
    if template is None:
        return NO_FORMAT
    common = "class_names: [...], input_shape: [C, H, W], normalization: {mean: [...], std: [...]} or model"
    if _is_table_model(kind):
        common = f"class_names: [...], input_shape: [{kind.features or 'F'}], normalization: model"
    block = template.format(p=str(path), common=common)
    return f"audit it with {block}; `advaudit import` turns that block into one safe target file"


def _is_table_model(kind: FileKind) -> bool:
    """A scikit-learn estimator (skops, or a pickle naming sklearn classes): its input is a row of ``[F]`` features."""
    return kind.kind == "skops" or kind.features is not None or any(c.startswith("sklearn.") for c in kind.classes)
