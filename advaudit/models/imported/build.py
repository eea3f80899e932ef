"""A :class:`~advaudit.models.imported.spec.TargetSpec` -> a ready, verified target.

Code runs only where the spec names it: ``model`` (Hydra ``_target_``), ``lightning_module`` and
``function``. Files are read without running code (TorchScript, ``torch.export``, ONNX through
onnxruntime, skops with scikit-learn's safe types), except pickle / joblib files and whole pickled
modules, which load only with ``trusted: true``. Whatever the source, the target is checked before
any audit uses it (:func:`~advaudit.models.imported.verify.verify_target`).
"""

from __future__ import annotations

import io
import logging
import pickle
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from torch import Tensor, nn

from advaudit.confutil import locate
from advaudit.errors import AdvauditError, one_line, require
from advaudit.models.classes import class_pairing
from advaudit.models.imported.adapters import ClassMap, InputAdapter, as_scores
from advaudit.models.imported.black_box import load_skops, onnx_bytes, onnx_predict, sklearn_predict
from advaudit.models.imported.exported import exported_module
from advaudit.models.imported.formats import FileKind, how_to_audit, identify
from advaudit.models.imported.spec import TargetSpec
from advaudit.models.imported.targets import BlackBoxTarget, ImportedTorchTarget, ModelPipeline
from advaudit.models.imported.weights import load_weights, read_state_dict, strip_prefix

log = logging.getLogger(__name__)

WEIGHT_FORMATS = ("state_dict", "safetensors", "lightning")
PICKLE_FORMATS = ("pickle", "joblib", "pickled_module")


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
    path = Path(str(spec.path)).expanduser()
    if spec.source == "lightning_module":
        return _lightning_module(spec, path), None, "lightning"
    kind = file_kind(spec)
    if spec.source == "module":
        require(kind.kind in WEIGHT_FORMATS, f"target.model takes its weights from a state_dict, safetensors or "
                f"Lightning file, but target.path={path} is {kind.detail}; " + how_to_audit(path, kind))
        module = _built_module(spec.model)
        state = strip_prefix(read_state_dict(path, kind.kind), module, spec.weights_prefix)
        load_weights(module, state, str(path))
        return module.eval(), None, kind.kind
    return _from_file(spec, path, kind, device)


def _from_file(spec: TargetSpec, path: Path, kind: FileKind, device: str) -> tuple[nn.Module | None, Callable | None, str]:
    if kind.kind == "torchscript":
        return torch.jit.load(str(path), map_location="cpu").eval(), None, "torchscript"
    if kind.kind == "export":
        return exported_module(torch.export.load(str(path)), f"target.path={path}"), None, "export"
    if kind.kind == "onnx":
        return None, onnx_predict(onnx_bytes(path), device), "onnx"
    if kind.kind == "skops":
        return None, sklearn_predict(load_skops(path.read_bytes(), spec.trusted_types, str(path))), "skops"
    if kind.kind in PICKLE_FORMATS:
        require(spec.trusted, f"refusing to unpickle {path}: it is {kind.detail}, and unpickling runs code the file "
                "names; if you trust the file add target.trusted=true (recorded in the report), or "
                + how_to_audit(path, kind).replace("audit it with ", "audit it safely by saving it another way: "))
        obj = _unpickle_trusted(path, kind)
        if isinstance(obj, nn.Module):
            return obj.eval(), None, kind.kind
        require(hasattr(obj, "predict_proba"), f"{path} holds a {type(obj).__name__}, which has neither forward nor "
                "predict_proba; save a classifier")
        return None, sklearn_predict(obj), kind.kind
    if kind.kind in WEIGHT_FORMATS:
        raise AdvauditError(f"target.path={path} is {kind.detail}: weights without the model that uses them; add "
                            "target.model={_target_: <the class or builder that made them>, ...} (or "
                            "target.lightning_module for a .ckpt)")
    raise AdvauditError(f"target.path={path} is {kind.detail}; " + how_to_audit(path, kind))


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


def _lightning_module(spec: TargetSpec, path: Path) -> nn.Module:
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


def _unpickle_trusted(path: Path, kind: FileKind) -> Any:
    log.warning("unpickling %s because target.trusted=true: this runs code the file names (%s)", path,
                ", ".join(kind.classes[:5]) or "unknown")
    if kind.kind == "pickled_module":
        return torch.load(path, map_location="cpu", weights_only=False)
    if kind.kind == "joblib":
        import joblib  # joblib brings its process pools along; only a trusted joblib file needs it

        return joblib.load(path)
    with open(path, "rb") as handle:
        return pickle.load(handle)


# -- runtimes that need no code ------------------------------------------------------------------
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
                            f"{one_line(error)[:240]}; check target.input_shape (and target.resize_from)") from None
    require(scores.dim() == 2 and len(scores) == 2, f"the model returned scores of shape {list(scores.shape)} for 2 "
            "inputs; it must return [batch, classes]")
    return int(scores.shape[1])


def module_to_bytes(module: nn.Module, model_shape: list[int]) -> tuple[str, bytes]:
    """The user's module as a code-free archive: ``("export", .pt2 bytes)``, else ``("torchscript", bytes)``."""
    example = torch.rand(3, *model_shape)
    buffer = io.BytesIO()
    try:
        program = torch.export.export(module.eval(), (example,), dynamic_shapes=({0: torch.export.Dim.AUTO},))
        torch.export.save(program, buffer)
        return "export", buffer.getvalue()
    except Exception as error:  # noqa: BLE001 - some modules cannot be exported; tracing is the fallback
        log.info("torch.export failed (%s); storing a TorchScript trace instead", one_line(error)[:200])
    buffer = io.BytesIO()
    try:
        torch.jit.save(torch.jit.trace(module.eval(), example), buffer)
    except Exception as error:  # noqa: BLE001
        raise AdvauditError(f"the model can be neither exported (torch.export) nor traced (torch.jit.trace): "
                            f"{one_line(error)[:240]}; audit it with a target block instead of importing it") from None
    return "torchscript", buffer.getvalue()


def module_from_bytes(backend: str, data: bytes) -> nn.Module:
    """The inverse of :func:`module_to_bytes` (and of a stored TorchScript / export file)."""
    if backend == "export":
        return exported_module(torch.export.load(io.BytesIO(data)), "the imported target file")
    return torch.jit.load(io.BytesIO(data), map_location="cpu").eval()


def place(target: Any, device: str, channels_last: bool = True) -> Any:
    """``target`` on ``device`` in eval mode (NHWC weights with ``channels_last``); a black box stays as it is."""
    if isinstance(target, torch.nn.Module):
        target = target.to(device).eval()
        return target.use_channels_last() if channels_last else target
    return target


def target_from_payload(payload: dict[str, Any], map_location: str = "cpu", trusted_types: list[str] | None = None,
                        channels_last: bool = True) -> Any:
    """Rebuild a target written by :func:`advaudit.models.imported.store.import_target` (running no code
    the file names)."""
    backend, meta = payload["backend"], payload["meta"]
    data = payload["program"].numpy().tobytes()
    adapters = dict(meta.get("adapters") or {})
    spec = TargetSpec(**{k: v for k, v in adapters.items() if k in {f.name for f in fields(TargetSpec)}})
    module = predict = None
    if backend in ("export", "torchscript"):
        module = module_from_bytes(backend, data)
    elif backend == "onnx":
        predict = onnx_predict(data, device=map_location)
    else:
        predict = sklearn_predict(load_skops(data, list(trusted_types or []), "the imported target file"))
    extra = {k: meta[k] for k in ("source", "format", "config", "temperature_fit_on", "adapters", "imported_with") if k in meta}
    target = assemble(module, predict, spec, str(meta.get("format", backend)), meta_extra=extra)
    target.temperature.fill_(float(payload.get("temperature", 1.0)))
    return place(target, map_location, channels_last)
