"""ONNX models, run by onnxruntime as a black box: no code a file names runs.

Detected by the protobuf's first field (``ir_version``). :func:`onnx_bytes` reads a model with its
external data folded in (a damaged file, a missing data file and a damaged data file are three
different messages) and is also what an advaudit target file stores; :func:`onnx_predict` runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from advaudit.errors import AdvauditError, clipped, one_line, require
from advaudit.models.targets.chunks import in_fixed_batches
from advaudit.models.targets.formats.probe import FileKind, Probe

#: the key an advaudit target file's ``backend`` holds for a program stored in this format
BACKEND = "onnx"
HINTS = {"onnx": "target={{path: {p}, {common}}} (ONNX, run by onnxruntime as a black box)"}


def detect(probe: Probe) -> FileKind | None:
    """An ONNX model: ModelProto starts with ``ir_version`` (field 1, varint), then usually the producer name."""
    head = probe.head
    if probe.names is None and (head.startswith(b"\x08") and probe.suffix == ".onnx"
                                or head[:1] == b"\x08" and b"\x12" in head[2:4]):
        return FileKind("onnx", "an ONNX model")
    return None


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[None, Callable[[Any], Any]]:
    """A prediction function over the ONNX model in ``path`` (onnxruntime's CUDA provider on a CUDA ``device``)."""
    return None, onnx_predict(onnx_bytes(path), device)


def from_bytes(data: bytes, device: str = "cpu", trusted_types: list[str] | None = None) -> tuple[None, Callable]:
    """A prediction function over the ONNX model an advaudit target file stores."""
    return None, onnx_predict(data, device=device)


def to_bytes(path: Path) -> bytes:
    """The ONNX model in ``path`` as one self-contained byte string (external data folded in)."""
    return onnx_bytes(path)


def onnx_bytes(path: Path) -> bytes:
    """An ONNX model with any external weight files (``model.onnx.data``) folded in, as bytes.

    Raises:
        AdvauditError: one line each for a file that is truncated or corrupt, an external data file that
            is missing, and an external data file that is truncated or corrupt.
    """
    import onnx  # ONNX: only ONNX targets need it
    from onnx.external_data_helper import load_external_data_for_model

    path = Path(path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # noqa: BLE001 - a damaged file is the user's
        raise AdvauditError(f"{path} is truncated or corrupt: its {path.stat().st_size} bytes are not an ONNX model "
                            f"({one_line(error)[:160]}); copy or export it again (torch.onnx.export)") from None
    external = _external_tensors(model)
    locations = sorted({_location(t) for t in external})
    missing = [name for name in locations if not (path.parent / name).is_file()]
    require(not missing, f"{path} keeps its weights in external data file(s) {missing}, which are not next to it in "
            f"{path.parent}; copy them there (or save the model as one file: onnx.save(model, path, "
            "save_as_external_data=False))")
    try:
        load_external_data_for_model(model, str(path.parent))
    except Exception as error:  # noqa: BLE001 - a damaged data file is the user's
        raise AdvauditError(f"the external data of {path} ({', '.join(locations)}) is truncated or "
                            f"corrupt ({one_line(error)[:160]}); copy it again, whole") from None
    short = [t.name for t in external if len(t.raw_data) != _tensor_bytes(t)]
    require(not short, f"the external data of {path} ({', '.join(locations)}) is truncated or corrupt: {len(short)} "
            f"weight(s) ({', '.join(short[:3])}) have fewer bytes than their shapes need; copy it again, whole")
    return model.SerializeToString()


def _external_tensors(model: Any) -> list[Any]:
    """The model's tensors whose data lives in an external file (their ``raw_data`` is filled by loading it)."""
    from onnx.external_data_helper import _get_all_tensors, uses_external_data  # ONNX: only ONNX targets need it

    return [t for t in _get_all_tensors(model) if uses_external_data(t)]


def _location(tensor: Any) -> str:
    return next((entry.value for entry in tensor.external_data if entry.key == "location"), "")


def _tensor_bytes(tensor: Any) -> int:
    """How many bytes a tensor of its shape and element type holds."""
    from onnx.helper import tensor_dtype_to_np_dtype  # ONNX: only ONNX targets need it

    return int(np.prod(list(tensor.dims), dtype=np.int64)) * np.dtype(tensor_dtype_to_np_dtype(tensor.data_type)).itemsize


def onnx_predict(model_bytes: bytes, device: str = "cpu") -> Callable[[Any], Any]:
    """An onnxruntime session as ``numpy [B, ...] -> numpy [B, M]`` (its first input and output)."""
    import onnxruntime as ort  # ONNX: only ONNX targets need it

    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device.startswith("cuda") else ["CPUExecutionProvider"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    try:
        session = ort.InferenceSession(model_bytes, sess_options=options,
                                       providers=[p for p in providers if p in ort.get_available_providers()])
    except Exception as error:  # noqa: BLE001 - a broken file is the user's
        raise AdvauditError(f"onnxruntime cannot load the ONNX model, which is damaged or uses operators it lacks: "
                            f"{clipped(error, 300)}; export it again (torch.onnx.export)") from None
    first = session.get_inputs()[0]
    batch = first.shape[0] if first.shape and isinstance(first.shape[0], int) else None
    input_name, output_name = first.name, session.get_outputs()[0].name

    def run(x: np.ndarray) -> np.ndarray:
        return session.run([output_name], {input_name: x})[0]

    def predict(x: Any) -> Any:
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
        return run(x) if batch is None else in_fixed_batches(run, x, batch)

    return predict
