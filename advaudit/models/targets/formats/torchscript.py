"""TorchScript archives (``torch.jit.save``): detected by their ``code/__torch__`` members, loaded with
``torch.jit.load`` (no Python code runs), stored as the archive's bytes in an advaudit target file."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from torch import nn

from advaudit.models.targets.formats.probe import FileKind, Probe

#: the key an advaudit target file's ``backend`` holds for a program stored in this format
BACKEND = "torchscript"
HINTS = {"torchscript": "target={{path: {p}, {common}}} (TorchScript: no code needed)"}


def detect(probe: Probe) -> FileKind | None:
    """A TorchScript archive: a zip with ``<archive>/code/__torch__/`` members and ``constants.pkl``."""
    names = probe.names or []
    if any("/code/__torch__/" in n for n in names) and any(n.endswith("constants.pkl") for n in names):
        return FileKind("torchscript", "a TorchScript archive (torch.jit.save)")
    return None


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[nn.Module, None]:
    """The scripted module in ``path`` (on the CPU; the caller places the finished target)."""
    return torch.jit.load(str(path), map_location="cpu").eval(), None


def from_bytes(data: bytes, device: str = "cpu", trusted_types: list[str] | None = None) -> tuple[nn.Module, None]:
    """The module an advaudit target file stores as TorchScript bytes."""
    return torch.jit.load(io.BytesIO(data), map_location="cpu").eval(), None


def to_bytes(module: nn.Module, example: torch.Tensor) -> bytes:
    """``module`` traced on ``example`` ``[B, *model_shape]`` as TorchScript bytes (raises what tracing raises)."""
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(module.eval(), example), buffer)
    return buffer.getvalue()
