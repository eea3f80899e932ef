"""Weights into the user's module, whichever format read them (``state_dict``, safetensors, Lightning ``.ckpt``).

The format modules read the tensors safely (``weights_only=True``; safetensors holds tensors only). Lightning checkpoints keep
the LightningModule's attribute names in front of every key (``model.conv1.weight`` for a module held
as ``self.model``): the prefix is taken from ``target.weights_prefix`` or, when unset, found as the one
leading component whose removal makes the keys those of the module. A mismatch is refused with every
missing, unexpected and mis-shaped key named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from torch import Tensor, nn

from advaudit.errors import AdvauditError


def weights_without_model(path: Path, kind: Any) -> AdvauditError:
    """The refusal of a weights file (``kind``: its :class:`~advaudit.models.targets.formats.probe.FileKind`) named
    without the model that uses them."""
    return AdvauditError(f"target.path={path} is {kind.detail}: weights without the model that uses them; add "
                         "target.model={_target_: <the class or builder that made them>, ...} (or "
                         "target.lightning_module for a .ckpt)")


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
