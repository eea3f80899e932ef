"""Weights from a file into the user's module: ``state_dict``, safetensors or a Lightning ``.ckpt``.

Loading is safe (``weights_only=True``; safetensors holds tensors only). Lightning checkpoints keep
the LightningModule's attribute names in front of every key (``model.conv1.weight`` for a module held
as ``self.model``): the prefix is taken from ``target.weights_prefix`` or, when unset, found as the one
leading component whose removal makes the keys those of the module. A mismatch is refused with every
missing, unexpected and mis-shaped key named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import torch
from safetensors.torch import load_file
from torch import Tensor, nn

from advaudit.errors import AdvauditError


def read_state_dict(path: str | Path, kind: str) -> dict[str, Tensor]:
    """The tensors of a ``state_dict`` / ``safetensors`` / ``lightning`` file (nothing unpickled)."""
    if kind == "safetensors":
        return dict(load_file(str(path), device="cpu"))
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


def strip_prefix(state: Mapping[str, Tensor], module: nn.Module, prefix: str | None) -> dict[str, Tensor]:
    """``state`` with the Lightning / DDP prefix removed (module docstring); unchanged when it already fits."""
    expected = set(module.state_dict())
    if prefix:
        kept = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        if not kept:
            raise AdvauditError(f"no weight key starts with target.weights_prefix={prefix!r}; keys look like "
                                f"{list(state)[:3]}")
        return kept
    if set(state) & expected:
        return dict(state)
    for candidate in sorted({k.split(".", 1)[0] + "." for k in state if "." in k}):
        stripped = {k[len(candidate):]: v for k, v in state.items() if k.startswith(candidate)}
        if set(stripped) & expected:
            return stripped
    return dict(state)


def load_weights(module: nn.Module, state: Mapping[str, Tensor], source: str) -> None:
    """Load ``state`` into ``module`` exactly, or raise naming every missing, unexpected and mis-shaped key."""
    own = module.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    misshaped = [f"{k} {list(state[k].shape)} vs {list(own[k].shape)}" for k in own
                 if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or misshaped:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing: {', '.join(missing)}")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected: {', '.join(unexpected)}")
        if misshaped:
            parts.append(f"{len(misshaped)} of another shape (file vs model): {', '.join(misshaped)}")
        raise AdvauditError(f"the weights in {source} do not fit {type(module).__name__}: " + "; ".join(parts)
                            + "; check target.model's arguments (e.g. num_classes) or target.weights_prefix")
    module.load_state_dict(dict(state), strict=True)
