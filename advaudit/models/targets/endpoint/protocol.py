"""The Open Inference Protocol's REST bodies, as bytes: requests encoded, answers and metadata decoded.

An inference request carries ``inputs: [{name, shape, datatype, data}]`` as JSON (``data`` flat, in row-major
order), or, with the binary tensor data extension, the same JSON without ``data`` (``parameters:
{binary_data_size: n}`` instead) followed by the raw little-endian bytes, its length in the
``Inference-Header-Content-Length`` header. Answers come back the same two ways. JSON is written by
orjson straight from the numpy array: a float32 is written in its shortest exact form, so the server
reads the very number the audit rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from advaudit.errors import AdvauditError, require

#: the protocol's datatypes and numpy's
NUMPY_TYPES = {"FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "INT8": np.int8, "INT16": np.int16,
               "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
               "UINT64": np.uint64, "BOOL": np.bool_}
HEADER_LENGTH = "Inference-Header-Content-Length"
BINARY_EXTENSION = "binary_tensor_data"


@dataclass
class ModelMetadata:
    """What ``GET /v2/models/{name}`` says: versions, platform, and each input's ``(name, datatype, shape)``."""

    name: str
    versions: list[str]
    platform: str
    inputs: list[tuple[str, str, list[int]]]
    outputs: list[tuple[str, str, list[int]]]


def parse_metadata(body: bytes, address: str) -> ModelMetadata:
    """The model metadata answer, read; a body that is not the protocol's refused in one line."""
    try:
        data = orjson.loads(body)
        tensors = {key: [(str(t["name"]), str(t["datatype"]), [int(d) for d in t.get("shape") or []])
                         for t in data.get(key) or []] for key in ("inputs", "outputs")}
        return ModelMetadata(str(data["name"]), [str(v) for v in data.get("versions") or []],
                             str(data.get("platform", "")), tensors["inputs"], tensors["outputs"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise AdvauditError(f"{address} does not answer with Open Inference Protocol model metadata ({error}; "
                            f"got {body[:120]!r}); check target.endpoint.url and target.endpoint.model") from None


def encode_request(x: np.ndarray, name: str, datatype: str, binary: bool, output: str | None = None
                   ) -> tuple[bytes, dict[str, str]]:
    """``(body, headers)`` of an inference request for the batch ``x`` ``[B, *shape]``."""
    x = np.ascontiguousarray(x, dtype=NUMPY_TYPES[datatype])
    tensor: dict[str, Any] = {"name": name, "shape": list(x.shape), "datatype": datatype}
    outputs = [{"name": output, **({"parameters": {"binary_data": True}} if binary else {})}] if output else None
    if not binary:
        tensor["data"] = x.reshape(-1)
        body = {"inputs": [tensor], **({"outputs": outputs} if outputs else {})}
        return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), {"Content-Type": "application/json"}
    raw = x.astype(x.dtype.newbyteorder("<"), copy=False).tobytes()
    tensor["parameters"] = {"binary_data_size": len(raw)}
    # the answer in binary too (binary_data_output: the whole answer; a named output's binary_data: that one)
    header = orjson.dumps({"inputs": [tensor], "parameters": {"binary_data_output": True},
                           **({"outputs": outputs} if outputs else {})})
    return header + raw, {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(header))}


def decode_response(body: bytes, headers: Any, output: str | None) -> tuple[np.ndarray, dict[str, Any]]:
    """``(scores [B, M], answer)`` from an inference answer (JSON, or JSON then binary outputs); ``answer`` is the
    JSON part without its outputs (``model_version``, ``parameters``).

    ``output`` picks the output by name (``None``: the first).
    """
    length = headers.get(HEADER_LENGTH) if headers is not None else None
    head, rest = (body[:int(length)], body[int(length):]) if length else (body, b"")
    data = orjson.loads(head)
    outputs = data.get("outputs") or []
    index = pick_output([str(o.get("name")) for o in outputs], output, repr(head[:160]))
    tensor = outputs[index]
    offset = sum(int((t.get("parameters") or {}).get("binary_data_size") or 0) for t in outputs[:index])
    size = int((tensor.get("parameters") or {}).get("binary_data_size") or 0)
    dtype = np.dtype(NUMPY_TYPES.get(str(tensor["datatype"]), np.float32)).newbyteorder("<")
    values = np.frombuffer(rest[offset:offset + size], dtype=dtype) if size else np.asarray(tensor["data"], dtype=dtype)
    return rows(values, [int(d) for d in tensor["shape"]]), {k: v for k, v in data.items() if k != "outputs"}


def pick_output(names: list[str], output: str | None, answer: str) -> int:
    """The index of the output named ``output`` among an answer's ``names`` (``None``: the first); refused in one
    line where there is none (``answer``: the start of the answer, for the message)."""
    require(bool(names), f"the server's answer holds no outputs ({answer})")
    if output is not None and output not in names:
        raise AdvauditError(f"target.endpoint.output_name={output!r} is not among the model's outputs {names}; "
                            f"use one of them")
    return names.index(output) if output is not None else 0


def rows(values: np.ndarray, shape: list[int]) -> np.ndarray:
    """An output's flat ``values`` as scores ``[B, M]`` (its ``shape``'s first dimension the batch)."""
    return values.reshape(shape[0], -1) if shape else values.reshape(1, -1)


def error_text(body: bytes) -> str:
    """The server's error message: the protocol's ``{"error": "..."}``, else the body's first line."""
    try:
        data = orjson.loads(body)
        if isinstance(data, dict) and data.get("error"):
            return " ".join(str(data["error"]).split())
        if isinstance(data, dict) and data.get("detail"):
            return " ".join(str(data["detail"]).split())[:300]
    except orjson.JSONDecodeError:
        pass
    text = body.decode("utf-8", "replace").strip()
    return " ".join(text.split())[:300] or "no message"
