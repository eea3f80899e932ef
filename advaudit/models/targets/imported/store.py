"""``advaudit import``: the model a ``target`` block describes -> one self-describing, safe target file.

:func:`import_target` turns a block into an advaudit target file once: the model as a code-free
program in one of the formats advaudit's own file can hold (``torch.export``, else TorchScript; ONNX
bytes; a skops archive for scikit-learn, also for a trusted pickle), each written by its format's
module (:mod:`advaudit.models.targets.formats`), the adapters and class map as plain data, the source as
plain data with its weights' SHA-256. The file is read back by the one loader
(:func:`advaudit.models.targets.io.load_target`) and its scores compared with the user's model on a probe
batch before the command succeeds. Loading it later runs no code it names.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from advaudit.confutil import plain
from advaudit.errors import AdvauditError, one_line, require
from advaudit.models.targets.formats.checkpoint import save_checkpoint
from advaudit.models.targets.formats import export, onnx, skops, torchscript
from advaudit.models.targets.imported.build import assemble, build_model, calibrate
from advaudit.models.targets.imported.spec import TargetSpec, parse_target_spec
from advaudit.models.targets.imported.verify import probe_batch, require_same_model, verify_target
from advaudit.models.targets.io import load_target

log = logging.getLogger(__name__)

#: spec keys that describe the adapters (kept in an imported file); the rest named the source
_ADAPTER_KEYS = ("class_names", "class_map", "class_alignment", "match_classes", "output_names", "input_shape",
                 "resize_from", "normalization", "outputs", "array", "name", "tolerance")


def trust_record(value: Any) -> str:
    """What loading the target ran, for the report: data only, code the config names, or a trusted pickle."""
    value = plain(value)
    if not isinstance(value, dict):
        return "data only (advaudit target file, loaded with weights_only=True)"
    named = [f"{key}: {value[key] if isinstance(value[key], str) else value[key].get('_target_')}"
             for key in ("model", "lightning_module", "function", "architecture") if value.get(key) is not None]
    parts = [f"code named in the config ({', '.join(named)})"] if named else ["no code named in the config"]
    if value.get("trusted"):
        parts.append("file marked trusted: pickles allowed")
    if value.get("trusted_types"):
        parts.append(f"skops types trusted by the config: {list(value['trusted_types'])}")
    return "; ".join(parts)


# -- advaudit import ------------------------------------------------------------------------------
def import_target(node: Any, out: str | Path, seed: int = 0) -> dict[str, Any]:
    """Write the model a block describes to ``out`` as one safe target file, verified; returns a summary."""
    spec = parse_target_spec(node, seed)
    require(spec.source != "function", "a prediction function is code, not data: it cannot be stored in a file; "
            "audit it with target={function: ...} directly")
    module, predict, fmt = build_model(spec)
    user = assemble(module, predict, spec, fmt)
    if spec.temperature == "calibrate":
        calibrate(user, spec.dataset)
    verify_target(user)
    backend, data, trusted = _program(spec, module, predict, fmt)
    adapters = {k: getattr(spec, k) for k in _ADAPTER_KEYS if getattr(spec, k) is not None}
    payload = {"kind": "target", "backend": backend, "program": torch.frombuffer(bytearray(data), dtype=torch.uint8),
               "temperature": float(user.temperature), "trusted_types": trusted,
               "meta": {**user.meta, "adapters": adapters, "imported_with": "advaudit import"}}
    out = save_checkpoint(out, payload)
    try:
        stored = load_target(out, channels_last=False, trusted_types=trusted)
        probe = probe_batch(user.input_shape, n=16, seed=seed)
        gap = require_same_model(user, stored, probe, spec.tolerance, f"the model stored in {out}")
    except AdvauditError:
        out.unlink(missing_ok=True)
        raise
    return {"path": str(out), "backend": backend, "format": fmt, "logit_gap": gap, "classes": user.class_names,
            "input_shape": user.input_shape, "sha256": spec.record().get("sha256"), "bytes": out.stat().st_size}


def _program(spec: TargetSpec, module: Any, predict: Any, fmt: str) -> tuple[str, bytes, list[str]]:
    """``(backend, bytes, trusted types)``: the model as data that loads without running named code."""
    path = Path(str(spec.path)).expanduser() if spec.path else None
    if module is not None:
        if fmt in (torchscript.BACKEND, export.BACKEND):
            return fmt, path.read_bytes(), []
        backend, data = module_to_bytes(module, list(spec.input_shape))
        return backend, data, []
    if fmt == onnx.BACKEND:
        return onnx.BACKEND, onnx.to_bytes(path), []
    data, trusted = skops.to_bytes(predict.estimator, path if fmt == skops.BACKEND else None)
    return skops.BACKEND, data, trusted


def module_to_bytes(module: torch.nn.Module, model_shape: list[int]) -> tuple[str, bytes]:
    """The user's module as a code-free program: ``("export", .pt2 bytes)``, else ``("torchscript", bytes)``."""
    example = torch.rand(3, *model_shape)
    try:
        return export.BACKEND, export.to_bytes(module, example)
    except Exception as error:  # noqa: BLE001 - some modules cannot be exported; tracing is the fallback
        log.info("torch.export failed (%s); storing a TorchScript trace instead", one_line(error)[:200])
    try:
        return torchscript.BACKEND, torchscript.to_bytes(module, example)
    except Exception as error:  # noqa: BLE001
        raise AdvauditError(f"the model can be neither exported (torch.export) nor traced (torch.jit.trace): "
                            f"{one_line(error)[:240]}; audit it with a target block instead of importing it") from None
