"""The formats a target file may have, one module each: how it is detected, loaded and stored.

A format module holds, for the file kinds it knows (:class:`~advaudit.models.targets.formats.probe.FileKind`):

- ``HINTS``: ``{kind: the target block that audits such a file}`` (``{p}``: the path, ``{common}``: the
  keys every block needs; ``None``: the file needs no block);
- ``detect(probe)``, from the file's bytes (:class:`~advaudit.models.targets.formats.probe.Probe`), and/or
  ``detect_payload(payload)``, from a torch file of plain data; each returns a ``FileKind`` or ``None``;
- ``load(spec, path, kind, device) -> (module, predict)``: the model in a file a ``target`` block names
  (a torch module, or a black-box prediction function);
- ``read_weights(path)``, for files of weights that ``target.model`` builds the module for;
- ``BACKEND``, ``from_bytes(data, device, trusted_types)`` and ``to_bytes(...)`` where ``advaudit
  import`` stores the model in this format inside advaudit's own target file.

:data:`FORMATS` is the one list of them, in detection order; :func:`identify` asks each in turn and
:func:`format_of` finds the module that loads a kind. A new format is one module and one entry in
:data:`FORMATS`; :mod:`advaudit.models.targets.io` is the one loader that dispatches to them.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch

from advaudit.files import describe_path, sniff
from advaudit.models.targets.formats import export, lightning, onnx, own, pickled, safetensors, skops, state_dict, torchscript
from advaudit.models.targets.formats.probe import FileKind, Probe, audit_advice

#: every format, in the order detection asks them (a zip's own formats before its torch pickle; a
#: raw pickle after safetensors and ONNX, whose first bytes it may share; a Lightning .ckpt before a
#: plain state_dict, whose keys it holds)
FORMATS: tuple[ModuleType, ...] = (skops, export, torchscript, safetensors, onnx, pickled, own, lightning, state_dict)
#: the formats advaudit's own target file can hold as a program (``backend``), written by ``advaudit import``
PROGRAM_BACKENDS = tuple(fmt.BACKEND for fmt in FORMATS if hasattr(fmt, "BACKEND"))

__all__ = ["FORMATS", "PROGRAM_BACKENDS", "FileKind", "format_of", "how_to_audit", "identify", "payload_kind",
           "program_format"]


def identify(path: str | Path, load_tensors: bool = True) -> FileKind:
    """What the file at ``path`` is (see :class:`FileKind`), read as bytes only.

    A torch file of plain tensors is opened with ``weights_only=True`` to tell advaudit checkpoints,
    ``state_dict`` files and Lightning checkpoints apart; with ``load_tensors=False`` it is reported
    as ``torch_tensors`` unopened (for a caller that loads it next anyway).
    """
    path = Path(path)
    what = describe_path(path)
    if what != "a file":
        return FileKind("missing", what)
    probe = Probe(path)
    for fmt in FORMATS:
        found = fmt.detect(probe) if hasattr(fmt, "detect") else None
        if found is not None:
            return found
    if probe.names is None:
        return FileKind("unknown", sniff(path))
    if probe.torch_pickle is None:
        return FileKind("unknown", f"a zip archive with {len(probe.names)} members (e.g. {probe.names[:3]})")
    if not load_tensors:
        return FileKind("torch_tensors", "a torch file of plain data and tensors")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as error:  # noqa: BLE001 - any failure here means "not readable as plain data"
        return FileKind("torch_other", f"a torch file that cannot be read as plain data ({type(error).__name__})")
    return payload_kind(payload)


def payload_kind(payload: object) -> FileKind:
    """What a torch file loaded as plain data holds: advaudit checkpoint, Lightning .ckpt, state_dict, other."""
    for fmt in FORMATS:
        found = fmt.detect_payload(payload) if hasattr(fmt, "detect_payload") else None
        if found is not None:
            return found
    return FileKind("torch_other", f"a torch file holding a {type(payload).__name__}")


def format_of(kind: str) -> ModuleType | None:
    """The format module that knows files of ``kind`` (``None`` for ``unknown``, ``torch_other``, ...)."""
    return next((fmt for fmt in FORMATS if kind in fmt.HINTS), None)


def program_format(backend: str) -> ModuleType:
    """The format module whose program an advaudit target file holds under ``backend``."""
    return next(fmt for fmt in FORMATS if getattr(fmt, "BACKEND", None) == backend)


def how_to_audit(path: str | Path, kind: FileKind) -> str:
    """The exact ``target`` block (or command) that audits a file of this kind."""
    fmt = format_of(kind.kind)
    return audit_advice(path, kind, fmt.HINTS[kind.kind] if fmt is not None else None)
