"""safetensors files: tensors only, so weights for a module the config names (``target.model``)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from safetensors.torch import load_file
from torch import Tensor

from advaudit.models.targets.formats.probe import FileKind, Probe
from advaudit.models.targets.formats.weights import weights_without_model

HINTS = {"safetensors": "target={{model: {{_target_: <your model class or builder>, ...}}, path: {p}, {common}}}"}


def detect(probe: Probe) -> FileKind | None:
    """A safetensors file: an 8-byte little-endian header length, then that many bytes of JSON."""
    head = probe.head
    if probe.names is not None or len(head) < 9 or head[8:9] != b"{":
        return None
    (length,) = struct.unpack("<Q", head[:8])
    if length > probe.path.stat().st_size:
        return None
    with open(probe.path, "rb") as handle:
        handle.seek(8)
        try:
            json.loads(handle.read(length))
        except ValueError:
            return None
    return FileKind("safetensors", "a safetensors file (tensors only)")


def read_weights(path: str | Path) -> dict[str, Tensor]:
    """The tensors in the file, on the CPU."""
    return dict(load_file(str(path), device="cpu"))


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[None, None]:
    """Weights alone do not make a model: refused with the block that names it."""
    raise weights_without_model(path, kind)
