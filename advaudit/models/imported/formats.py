"""What a model file is, found without running any of it, and the config that audits it.

:func:`identify` reads a file's magic bytes, a zip archive's member names and, for torch's pickles,
the names of the classes the pickle would import (from its opcodes, never by unpickling). It tells
apart advaudit's own checkpoints, plain ``state_dict`` files, Lightning ``.ckpt`` files, TorchScript
and ``torch.export`` archives, ONNX, safetensors, skops, pickled modules and other pickles;
:func:`how_to_audit` turns that into the exact ``target`` block that audits the file.
"""

from __future__ import annotations

import json
import pickletools
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from advaudit.files import describe_path, sniff

#: classes a plain tensor pickle may name: anything else needs code to unpickle
_TENSOR_GLOBALS = ("collections.OrderedDict", "torch._utils.", "torch.", "builtins.set", "__builtin__.set",
                   "_codecs.encode", "numpy.core.multiarray._reconstruct", "numpy.dtype", "numpy.ndarray")
_CODE_PREFIXES = ("torch.nn.", "torchvision.", "timm.", "transformers.", "pytorch_lightning.", "lightning.")


@dataclass
class FileKind:
    """``kind``: one of ``advaudit``, ``state_dict``, ``lightning``, ``torchscript``, ``export``, ``onnx``,
    ``safetensors``, ``skops``, ``pickled_module``, ``pickle``, ``joblib``, ``torch_other`` or ``unknown``;
    ``classes``: the classes a pickle would import; ``detail``: what it is, in words; ``features``: a
    scikit-learn estimator's ``n_features_in_``, where the file shows it without running anything."""

    kind: str
    detail: str
    classes: list[str] = field(default_factory=list)
    features: int | None = None


def identify(path: str | Path, load_tensors: bool = True) -> FileKind:
    """What the file at ``path`` is (see :class:`FileKind`), read as bytes only.

    A torch file of plain tensors is opened with ``weights_only=True`` to tell advaudit checkpoints,
    ``state_dict`` files and Lightning checkpoints apart; with ``load_tensors=False`` it is reported
    as ``torch_tensors`` unopened (for a caller that loads it next anyway).
    """
    path = Path(path)
    what = describe_path(path)
    if what != "a file":
        return FileKind("missing", what)
    with open(path, "rb") as handle:
        head = handle.read(64)
    if zipfile.is_zipfile(path):
        return _identify_zip(path, load_tensors)
    if _is_safetensors(path, head):
        return FileKind("safetensors", "a safetensors file (tensors only)")
    if head.startswith(b"\x08") and path.suffix.lower() == ".onnx" or _looks_onnx(head):
        return FileKind("onnx", "an ONNX model")
    if head[:1] == b"\x80" or path.suffix.lower() in (".joblib", ".pkl", ".pickle"):
        data = path.read_bytes() if head[:1] == b"\x80" else b""
        classes = _pickle_globals(data)
        kind = "joblib" if path.suffix.lower() == ".joblib" else "pickle"
        owner = _main_class(classes)
        return FileKind(kind, f"a {kind} file" + (f" of a {owner}" if owner else ""), classes, _pickled_int(data))
    return FileKind("unknown", sniff(path))


def _identify_zip(path: Path, load_tensors: bool) -> FileKind:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        if "schema.json" in names:
            return FileKind("skops", "a skops archive (scikit-learn, loaded without pickle)",
                            features=_skops_features(archive))
        if any(n.endswith("/archive_format") or n == "archive_format" for n in names) and \
                any("models/" in n and n.endswith(".json") for n in names):
            return FileKind("export", "a torch.export archive (.pt2)")
        if any("/code/__torch__/" in n for n in names) and any(n.endswith("constants.pkl") for n in names):
            return FileKind("torchscript", "a TorchScript archive (torch.jit.save)")
        pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pickles:
            return FileKind("unknown", f"a zip archive with {len(names)} members (e.g. {names[:3]})")
        classes = _pickle_globals(archive.read(pickles[0]))
    code = [c for c in classes if not c.startswith(_TENSOR_GLOBALS) or c.startswith(_CODE_PREFIXES)]
    if code:
        owner = _main_class(code)
        if any(c.startswith(_CODE_PREFIXES) for c in code):
            return FileKind("pickled_module", f"a whole pickled module ({owner or code[0]}; torch.save(model)) that needs code to unpickle", code)
        return FileKind("pickle", f"a torch file that needs code to unpickle ({', '.join(code[:3])})", code)
    if not load_tensors:
        return FileKind("torch_tensors", "a torch file of plain data and tensors")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as error:  # noqa: BLE001 - any failure here means "not readable as plain data"
        return FileKind("torch_other", f"a torch file that cannot be read as plain data ({type(error).__name__})")
    return payload_kind(payload)


def payload_kind(payload: object) -> FileKind:
    """What a torch file loaded as plain data holds: advaudit checkpoint, Lightning .ckpt, state_dict, other."""
    if isinstance(payload, dict) and payload.get("format") == "advaudit":
        return FileKind("advaudit", f"an advaudit {payload.get('kind')!r} checkpoint")
    if isinstance(payload, dict) and ("pytorch-lightning_version" in payload or {"state_dict", "global_step"} <= set(payload)):
        return FileKind("lightning", "a Lightning training checkpoint (.ckpt)")
    if isinstance(payload, dict) and payload and all(isinstance(v, torch.Tensor) for v in payload.values()):
        return FileKind("state_dict", f"a plain state_dict ({len(payload)} tensors, e.g. {next(iter(payload))!r})")
    if isinstance(payload, dict) and isinstance(payload.get("state_dict"), dict):
        return FileKind("state_dict", "a dict with a 'state_dict' entry")
    if isinstance(payload, dict) and isinstance(payload.get("model"), dict):
        return FileKind("state_dict", "a dict with a 'model' state_dict entry")
    return FileKind("torch_other", f"a torch file holding a {type(payload).__name__}")


def _is_safetensors(path: Path, head: bytes) -> bool:
    if len(head) < 9 or head[8:9] != b"{":
        return False
    (length,) = struct.unpack("<Q", head[:8])
    if length > path.stat().st_size:
        return False
    with open(path, "rb") as handle:
        handle.seek(8)
        try:
            json.loads(handle.read(length))
        except ValueError:
            return False
    return True


def _looks_onnx(head: bytes) -> bool:
    """ONNX's ModelProto starts with ``ir_version`` (field 1, varint) and then usually the producer name."""
    return head[:1] == b"\x08" and b"\x12" in head[2:4]


def _pickle_globals(data: bytes) -> list[str]:
    """``module.qualname`` of every class or function a pickle would import (opcodes only, nothing run)."""
    found: list[str] = []
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
                strings.append(str(arg))
            elif op.name == "GLOBAL":
                found.append(str(arg).replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
    except Exception:  # noqa: BLE001 - truncated or compressed: report what was seen
        pass
    return list(dict.fromkeys(found))


def _pickled_int(data: bytes, name: str = "n_features_in_") -> int | None:
    """The int a pickle stores under the attribute ``name`` (opcodes only, nothing run); ``None`` if not seen."""
    after_name = False
    try:
        for op, arg, _ in pickletools.genops(data):
            if after_name and op.name in ("BININT", "BININT1", "BININT2", "INT", "LONG1", "LONG"):
                return int(arg) if int(arg) > 0 else None
            after_name = op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8") and arg == name \
                or (after_name and op.name in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"))
    except Exception:  # noqa: BLE001 - truncated, compressed or raw array bytes (joblib): what was seen
        pass
    return None


def _skops_features(archive: zipfile.ZipFile) -> int | None:
    """``n_features_in_`` of the estimator a skops archive holds (read from its ``schema.json``)."""
    try:
        content = json.loads(archive.read("schema.json")).get("content", {})
        node = (content.get("content", content) if isinstance(content, dict) else {}).get("n_features_in_")
        value = int(node["content"]) if isinstance(node, dict) else None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return value if value and value > 0 else None


def _main_class(classes: list[str]) -> str | None:
    """The first class that is neither a tensor helper nor a ``torch.nn`` building block."""
    for name in classes:
        if not name.startswith(_TENSOR_GLOBALS) and not name.startswith(("builtins.", "__builtin__.", "copyreg.")):
            return name
    return None


def how_to_audit(path: str | Path, kind: FileKind) -> str:
    """The exact ``target`` block (or command) that audits a file of this kind."""
    p = str(path)
    common = "class_names: [...], input_shape: [C, H, W], normalization: {mean: [...], std: [...]} or model"
    if _is_table_model(kind):
        common = f"class_names: [...], input_shape: [{kind.features or 'F'}], normalization: model"
    blocks = {
        "torchscript": f"target={{path: {p}, {common}}} (TorchScript: no code needed)",
        "export": f"target={{path: {p}, {common}}} (torch.export: no code needed)",
        "onnx": f"target={{path: {p}, {common}}} (ONNX, run by onnxruntime as a black box)",
        "skops": f"target={{path: {p}, {common}}}",
        "safetensors": f"target={{model: {{_target_: <your model class or builder>, ...}}, path: {p}, {common}}}",
        "state_dict": f"target={{model: {{_target_: <the class or builder that made it, e.g. "
                      f"torchvision.models.resnet18>, ...}}, path: {p}, {common}}}",
        "lightning": f"target={{lightning_module: <your LightningModule class, e.g. my_pkg.LitNet>, path: {p}, {common}}} "
                     f"(or model: {{_target_: <the inner nn.Module>}} with path: {p}: its state_dict is used)",
        "pickled_module": f"target={{path: {p}, trusted: true, {common}}} only if you trust the file (unpickling "
                          "runs code); better, save model.state_dict() or torch.jit.script/torch.export it",
        "pickle": f"target={{path: {p}, trusted: true, {common}}} only if you trust the file (unpickling runs code); "
                  "better, save a scikit-learn model with skops.io.dump",
        "joblib": f"target={{path: {p}, trusted: true, {common}}} only if you trust the file (unpickling runs code); "
                  "better, save it with skops.io.dump",
    }
    block = blocks.get(kind.kind)
    if block is None:
        return "pass an advaudit target.pt (train.py, or `advaudit import`) or a target block (README: Audit a model you already have)"
    return f"audit it with {block}; `advaudit import` turns that block into one safe target file"


def _is_table_model(kind: FileKind) -> bool:
    """A scikit-learn estimator (skops, or a pickle naming sklearn classes): its input is a row of ``[F]`` features."""
    return kind.kind == "skops" or kind.features is not None or any(c.startswith("sklearn.") for c in kind.classes)
