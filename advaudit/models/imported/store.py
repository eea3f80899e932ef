"""Targets from a ``target`` block, and ``advaudit import``: one self-describing, safe target file.

:func:`load_block_target` builds, calibrates and verifies the target a block describes.
:func:`import_target` turns a block into an advaudit checkpoint once: the model as a code-free
archive (``torch.export``, else TorchScript; ONNX bytes; a skops archive for scikit-learn, also
for a trusted pickle), the adapters and class map as plain data, the source as plain data with
its weights' SHA-256. The file is read back and its scores compared with the user's model on a
probe batch before the command succeeds. Loading it later runs no code it names
(:func:`advaudit.models.imported.build.target_from_payload`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from advaudit.confutil import plain
from advaudit.errors import AdvauditError, require
from advaudit.models.calibration import fit_temperature
from advaudit.models.checkpoint import save_checkpoint
from advaudit.models.classes import class_pairing
from advaudit.models.imported.black_box import onnx_bytes
from advaudit.models.imported.build import assemble, build_model, module_to_bytes, place
from advaudit.models.imported.formats import identify
from advaudit.models.imported.spec import ADVAUDIT_FILE_KEYS, TargetSpec, parse_target_spec
from advaudit.models.imported.verify import probe_batch, require_same_model, verify_target
from advaudit.models.io import load_target

log = logging.getLogger(__name__)

#: spec keys that describe the adapters (kept in an imported file); the rest named the source
_ADAPTER_KEYS = ("class_names", "class_map", "class_alignment", "match_classes", "output_names", "input_shape",
                 "resize_from", "normalization", "outputs", "array", "name", "tolerance")


def load_any_target(value: Any, device: str = "cpu", seed: int = 0) -> Any:
    """The target ``value`` names: a path (advaudit's own or an imported file) or a ``target`` block."""
    value = plain(value)
    if isinstance(value, dict):
        return load_block_target(value, device=device, seed=seed)
    return load_target(Path(str(value)).expanduser(), map_location=device)


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


def load_block_target(node: Any, device: str = "cpu", seed: int = 0) -> Any:
    """The verified target a ``target`` block describes, on ``device`` (module docstring)."""
    data = dict(node)
    path = data.get("path")
    if path is not None and identify(Path(str(path)).expanduser()).kind == "advaudit":
        extra = sorted(set(data) - set(ADVAUDIT_FILE_KEYS))
        require(not extra, f"target.path={path} is an advaudit target file that describes itself; drop {extra}")
        architecture = data.get("architecture")
        target = load_target(Path(str(path)).expanduser(), map_location=device,
                             trusted_types=list(data.get("trusted_types") or []),
                             architectures=[str(architecture)] if architecture else [])
        target.meta.update(class_pairing(data.get("class_alignment"), data.get("match_classes") or "name"))
        return target
    require(data.get("architecture") is None, f"target.architecture names the architecture of an advaudit target "
            f"file (written by train.py); target.path={path} is not one: name its model with target.model="
            "{_target_: ...} instead")
    spec = parse_target_spec(node, seed)
    module, predict, fmt = build_model(spec, device)
    target = assemble(module, predict, spec, fmt)
    if spec.temperature == "calibrate":
        calibrate(target, spec.dataset)
    verify_target(target)
    target = place(target, device)
    # the dataset in meta came from the user's config, not from a file: its code may be the user's own
    target.dataset_from_config = spec.dataset is not None
    return target


def calibrate(target: Any, dataset: dict[str, Any]) -> float:
    """Fit the target's temperature on its dataset's validation split (Guo et al. 2017); returns T."""
    datamodule = instantiate(OmegaConf.create(dataset))
    datamodule.setup()
    split = datamodule.splits.get("val")
    require(split is not None and len(split) > 0, "target.temperature=calibrate needs a validation split; set "
            "target.dataset.val_fraction > 0")
    target.check_input(split.x)
    with torch.no_grad():
        logits = torch.cat([target.logits(split.x[i:i + 512].to(target.device)).cpu() for i in range(0, len(split.x), 512)])
    temperature = fit_temperature(logits, split.y)
    target.temperature.fill_(temperature)
    target.meta["temperature_fit_on"] = f"val ({len(split)} items)"
    log.info("temperature %.3f fitted on %d validation items", temperature, len(split))
    return temperature


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
        if fmt in ("torchscript", "export"):
            return fmt, path.read_bytes(), []
        backend, data = module_to_bytes(module, list(spec.input_shape))
        return backend, data, []
    if fmt == "onnx":
        return "onnx", onnx_bytes(path), []
    import skops.io as sio  # skops is slow to import; only scikit-learn targets need it

    data = path.read_bytes() if fmt == "skops" else sio.dumps(predict.estimator)
    return "skops", data, list(sio.get_untrusted_types(data=data))

