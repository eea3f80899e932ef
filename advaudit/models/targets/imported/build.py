"""A :class:`~advaudit.models.targets.imported.spec.TargetSpec` -> a ready, verified target.

Code runs only where the spec names it: ``model`` (Hydra ``_target_``), ``lightning_module`` and
``function``; an ``endpoint`` is queried, never run here. A file the spec names is loaded by its format's module (:mod:`advaudit.models.targets.formats`),
without running code (TorchScript, ``torch.export``, ONNX through onnxruntime, skops with
scikit-learn's safe types), except pickle / joblib files and whole pickled modules, which load only
with ``trusted: true``. Whatever the source, the target is checked before any audit uses it
(:func:`~advaudit.models.targets.imported.verify.verify_target`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from torch import Tensor, nn

from advaudit.confutil import locate
from advaudit.errors import AdvauditError, clipped, one_line, require
from advaudit.models.targets.calibration import fit_temperature
from advaudit.models.targets import endpoint
from advaudit.models.targets.classes import class_pairing
from advaudit.models.targets.formats import FileKind, format_of, how_to_audit, identify, lightning, pickled
from advaudit.models.targets.adapters import ClassMap, InputAdapter, as_scores
from advaudit.models.targets.imported.spec import TargetSpec, check_shapes
from advaudit.models.targets.imported.targets import BlackBoxTarget, ImportedTorchTarget, ModelPipeline
from advaudit.models.targets.formats.weights import load_weights, strip_prefix

log = logging.getLogger(__name__)

#: file kinds whose model gives probabilities unless ``target.outputs`` says otherwise (with ``skops``)
PICKLE_FORMATS = tuple(pickled.HINTS)


def file_kind(spec: TargetSpec) -> FileKind:
    """The format of ``spec.path``: as named in ``spec.format``, else identified from the file."""
    require(spec.path is not None, "target.path is not set")
    found = identify(Path(spec.path).expanduser())
    if found.kind == "missing":
        raise AdvauditError(f"target.path={spec.path} is {found.detail}")
    if spec.format == "auto":
        return found
    if spec.format == "pickle" and found.kind == "pickled_module":
        return found
    return FileKind(spec.format, f"a {spec.format} file (as target.format says)", found.classes)


def build_model(spec: TargetSpec, device: str = "cpu") -> tuple[nn.Module | None, Callable[[Any], Any] | None, str]:
    """The user's model: ``(torch module, None, format)`` or ``(None, black-box predict, format)``.

    Torch modules are built on the CPU (the caller moves the finished target); an ONNX session uses
    onnxruntime's CUDA provider when ``device`` is a CUDA device and the provider is installed.
    """
    if spec.source == "function":
        return None, _function(spec.function), "function"
    if spec.source == "endpoint":  # a model on a server: its metadata may give the input shape
        _, predict = endpoint.load(spec)
        check_shapes(spec)
        return None, predict, "endpoint"
    path = Path(str(spec.path)).expanduser()
    if spec.source == "lightning_module":
        return lightning.load_module(spec, path), None, "lightning"
    kind = file_kind(spec)
    fmt = format_of(kind.kind)
    if spec.source == "module":
        require(hasattr(fmt, "read_weights"), f"target.model takes its weights from a state_dict, safetensors or "
                f"Lightning file, but target.path={path} is {kind.detail}; " + how_to_audit(path, kind))
        module = _built_module(spec.model)
        state = strip_prefix(fmt.read_weights(path), module, spec.weights_prefix)
        load_weights(module, state, str(path))
        return module.eval(), None, kind.kind
    if not hasattr(fmt, "load"):
        raise AdvauditError(f"target.path={path} is {kind.detail}; " + how_to_audit(path, kind))
    module, predict = fmt.load(spec, path, kind, device)
    return module, predict, kind.kind


def _built_module(node: Any) -> nn.Module:
    """``target.model`` built by Hydra, its ``_target_`` checked first (a typo is one line naming the key)."""
    require(isinstance(node, dict) and "_target_" in node, f"target.model={node!r} must be a block naming the "
            "module, {_target_: <class or function returning an nn.Module>, <its arguments>}")
    locate(node["_target_"], "target.model._target_")
    try:
        module = instantiate(node)
    except InstantiationException as error:
        raise AdvauditError(f"target.model could not be built: {one_line(error)[:300]}; check target.model's "
                            "arguments") from None
    require(isinstance(module, nn.Module), f"target.model built a {type(module).__name__}, not a torch.nn.Module; "
            "name a class or a function that returns the module")
    return module


def _function(node: Any) -> Callable[[Any], Any]:
    if isinstance(node, str):
        function = locate(node, "target.function")
    else:
        require(isinstance(node, dict) and "_target_" in node, f"target.function={node!r} must be a dotted path "
                "(my_pkg.predict) or a block {_target_: my_pkg.predict, _partial_: true, <its arguments>}")
        locate(node["_target_"], "target.function._target_")
        function = instantiate(node)
    require(callable(function), f"target.function built a {type(function).__name__}, which cannot be called; name "
            "a function from inputs [B, ...] to probabilities [B, K] (add _partial_: true to pass arguments)")
    return function


# -- the target --------------------------------------------------------------------------------------
def assemble(module: nn.Module | None, predict: Callable | None, spec: TargetSpec, fmt: str,
             meta_extra: dict[str, Any] | None = None) -> ImportedTorchTarget | BlackBoxTarget:
    """Wrap the user's model with its adapters and class map into an audit target (not yet verified)."""
    outputs = spec.outputs or ("probabilities" if fmt in ("skops", "function") or (
        module is None and fmt in PICKLE_FORMATS) else "logits")
    model_shape = list(spec.input_shape)
    audit_shape = list(spec.resize_from or model_shape)
    adapter = InputAdapter(model_shape, spec.resize_from, spec.normalization)
    n_outputs = _count_outputs(module, predict, adapter, audit_shape, spec)
    class_map = ClassMap(spec.class_map, n_outputs, spec.output_names) if spec.class_map is not None else None
    if class_map is None:
        require(n_outputs == len(spec.class_names or []), f"the model gives {n_outputs} scores per input but "
                f"target.class_names has {len(spec.class_names or [])} names; give one name per model output "
                "(in order) or a target.class_map")
    meta = {"class_names": spec.audit_classes(), "input_shape": audit_shape, "model_input_shape": model_shape,
            "normalization": spec.normalization, "arch": f"imported:{fmt}", "outputs": outputs, "format": fmt,
            "source": spec.record(), **({"config": {"dataset": spec.dataset}} if spec.dataset else {}),
            **class_pairing(spec.class_alignment, spec.match_classes),
            **(meta_extra or {})}
    temperature = float(spec.temperature) if spec.temperature != "calibrate" else 1.0
    if module is not None:
        return ImportedTorchTarget(ModelPipeline(adapter, module, outputs, class_map), meta, temperature).eval()
    return BlackBoxTarget(predict, adapter, outputs, class_map, meta, temperature, array=spec.array)


def _count_outputs(module: nn.Module | None, predict: Callable | None, adapter: InputAdapter,
                   audit_shape: list[int], spec: TargetSpec) -> int:
    """How many scores the model gives per input, from a probe batch; a model that does not run is refused."""
    probe = torch.rand(2, *audit_shape, generator=torch.Generator().manual_seed(0))
    try:
        with torch.no_grad():
            x = adapter(probe)
            if module is not None:
                scores = as_scores(module(x))
            else:
                raw = predict(x.numpy() if spec.array == "numpy" else x)
                scores = torch.as_tensor(raw.numpy() if isinstance(raw, Tensor) else np.asarray(raw))
    except AdvauditError:
        raise
    except Exception as error:  # noqa: BLE001 - the model refusing its input is the config's problem
        adapted = f" (resized from {list(spec.resize_from)})" if spec.resize_from else ""
        raise AdvauditError(f"the model does not run on inputs of shape {[2, *spec.input_shape]}{adapted}: "
                            f"{clipped(error)}; check target.input_shape (and target.resize_from)") from None
    require(scores.dim() == 2 and len(scores) == 2, f"the model returned scores of shape {list(scores.shape)} for 2 "
            "inputs; it must return [batch, classes]")
    return int(scores.shape[1])


def place(target: Any, device: str, channels_last: bool = True) -> Any:
    """``target`` on ``device`` in eval mode (NHWC weights with ``channels_last``); a black box stays as it is."""
    if isinstance(target, torch.nn.Module):
        target = target.to(device).eval()
        return target.use_channels_last() if channels_last else target
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
