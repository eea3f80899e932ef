"""Plain ``state_dict`` files (``torch.save(model.state_dict(), path)``): weights for ``target.model``.

Detected from the content of a torch file of plain data (loaded with ``weights_only=True``): a dict
of tensors, or a dict holding one under ``state_dict`` or ``model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch
from torch import Tensor

from advaudit.errors import AdvauditError
from advaudit.models.targets.formats.probe import FileKind
from advaudit.models.targets.formats.weights import weights_without_model

HINTS = {"state_dict": "target={{model: {{_target_: <the class or builder that made it, e.g. "
                       "torchvision.models.resnet18>, ...}}, path: {p}, {common}}}"}


def detect_payload(payload: object) -> FileKind | None:
    """A dict of tensors, or a dict with a ``state_dict`` / ``model`` dict entry."""
    if isinstance(payload, dict) and payload and all(isinstance(v, torch.Tensor) for v in payload.values()):
        return FileKind("state_dict", f"a plain state_dict ({len(payload)} tensors, e.g. {next(iter(payload))!r})")
    if isinstance(payload, dict) and isinstance(payload.get("state_dict"), dict):
        return FileKind("state_dict", "a dict with a 'state_dict' entry")
    if isinstance(payload, dict) and isinstance(payload.get("model"), dict):
        return FileKind("state_dict", "a dict with a 'model' state_dict entry")
    return None


def read_weights(path: str | Path) -> dict[str, Tensor]:
    """The tensors of a ``state_dict`` (or of a Lightning ``.ckpt``'s ``state_dict``), nothing unpickled."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - refused as plain data: say how to give weights safely
        raise AdvauditError(f"{path} cannot be read as plain tensors ({type(error).__name__}); save the weights with "
                            "torch.save(model.state_dict(), path) or safetensors") from None
    if isinstance(payload, Mapping):
        for key in ("state_dict", "model", "model_state_dict"):
            if isinstance(payload.get(key), Mapping) and not isinstance(payload.get(key), Tensor):
                payload = payload[key]
                break
    tensors = {str(k): v for k, v in dict(payload).items() if isinstance(v, Tensor)} if isinstance(payload, Mapping) else {}
    if not tensors:
        raise AdvauditError(f"{path} holds no tensors under a state_dict; save torch.save(model.state_dict(), path)")
    return tensors


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[None, None]:
    """Weights alone do not make a model: refused with the block that names it."""
    raise weights_without_model(path, kind)
