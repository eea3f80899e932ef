"""Lightning training checkpoints (``.ckpt``): the ``state_dict`` inside for ``target.model``, or the whole
LightningModule through ``target.lightning_module``'s ``load_from_checkpoint``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import Tensor, nn

from advaudit.confutil import locate
from advaudit.errors import AdvauditError, one_line, require
from advaudit.models.targets.formats import state_dict
from advaudit.models.targets.formats.probe import FileKind
from advaudit.models.targets.formats.weights import weights_without_model

HINTS = {"lightning": "target={{lightning_module: <your LightningModule class, e.g. my_pkg.LitNet>, path: {p}, "
                      "{common}}} (or model: {{_target_: <the inner nn.Module>}} with path: {p}: its state_dict is used)"}


def detect_payload(payload: object) -> FileKind | None:
    """A dict with Lightning's version key, or with ``state_dict`` and ``global_step``."""
    if isinstance(payload, dict) and ("pytorch-lightning_version" in payload or {"state_dict", "global_step"} <= set(payload)):
        return FileKind("lightning", "a Lightning training checkpoint (.ckpt)")
    return None


def read_weights(path: str | Path) -> dict[str, Tensor]:
    """The checkpoint's ``state_dict`` tensors (nothing unpickled)."""
    return state_dict.read_weights(path)


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[None, None]:
    """Without ``target.lightning_module`` the weights have no model: refused with the block that names it."""
    raise weights_without_model(path, kind)


def load_module(spec: Any, path: Path) -> nn.Module:
    """``spec.lightning_module.load_from_checkpoint(path)`` in eval mode (code the config names runs;
    hyper-parameters that need code to unpickle only with ``target.trusted``)."""
    cls = locate(spec.lightning_module, "target.lightning_module")
    require(hasattr(cls, "load_from_checkpoint"), f"target.lightning_module={spec.lightning_module} is not a "
            "LightningModule class (it has no load_from_checkpoint)")
    try:
        module = cls.load_from_checkpoint(str(path), map_location="cpu", weights_only=not spec.trusted)
    except Exception as error:  # noqa: BLE001 - a refusal of the file's content is the user's to fix
        text = one_line(error)
        if "weights_only" in text or "Unsupported global" in text or "Weights only load failed" in text:
            raise AdvauditError(f"{path} stores hyper-parameters that need code to unpickle; add target.trusted=true "
                                "if you trust the file, or give target.model={_target_: ...} to build the module and "
                                "take only its state_dict from the .ckpt") from None
        raise AdvauditError(f"{spec.lightning_module}.load_from_checkpoint({path}) failed: {text[:300]}") from None
    return module.eval()
