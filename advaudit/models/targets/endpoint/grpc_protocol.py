"""The Open Inference Protocol over gRPC (``target.endpoint.protocol: grpc``): messages, calls and status codes.

The service ``inference.GRPCInferenceService`` (KServe's ``grpc_predict_v2.proto``, Triton's and MLServer's
too) is called without generated code: the messages it takes are described here field by field
(:data:`MESSAGES`, the numbers the protocol fixes) and built with protobuf's descriptor pool, so no
``protoc`` and no server package is needed. A batch goes as one input tensor whose values are
``raw_input_contents`` (the array's little-endian bytes, as the binary extension sends them on REST);
the server answers with ``raw_output_contents`` (KServe, Triton) or typed ``contents``; both are read.
A ``map<string, InferParameter>`` is described as the repeated key/value message it is on the wire.
gRPC's status codes are given the HTTP status the REST path would meet (:func:`status_of`), so a
refusal reads the same on both transports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import numpy as np
import orjson

from advaudit.errors import AdvauditError
from advaudit.models.targets.endpoint.protocol import NUMPY_TYPES, pick_output, rows
from advaudit.models.targets.endpoint.settings import EndpointSettings

SERVICE = "/inference.GRPCInferenceService/"
#: message -> [(field, number, type, repeated)]; a type names a scalar (protobuf's) or another message here
MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    "InferParameter": [("bool_param", 1, "bool", False), ("int64_param", 2, "int64", False),
                       ("string_param", 3, "string", False), ("double_param", 4, "double", False)],
    "Parameter": [("key", 1, "string", False), ("value", 2, "InferParameter", False)],
    "InferTensorContents": [("bool_contents", 1, "bool", True), ("int_contents", 2, "int32", True),
                            ("int64_contents", 3, "int64", True), ("uint_contents", 4, "uint32", True),
                            ("uint64_contents", 5, "uint64", True), ("fp32_contents", 6, "float", True),
                            ("fp64_contents", 7, "double", True)],
    "Tensor": [("name", 1, "string", False), ("datatype", 2, "string", False), ("shape", 3, "int64", True),
               ("parameters", 4, "Parameter", True), ("contents", 5, "InferTensorContents", False)],
    "RequestedOutput": [("name", 1, "string", False), ("parameters", 2, "Parameter", True)],
    "ModelInferRequest": [("model_name", 1, "string", False), ("model_version", 2, "string", False),
                          ("id", 3, "string", False), ("parameters", 4, "Parameter", True),
                          ("inputs", 5, "Tensor", True), ("outputs", 6, "RequestedOutput", True),
                          ("raw_input_contents", 7, "bytes", True)],
    "ModelInferResponse": [("model_name", 1, "string", False), ("model_version", 2, "string", False),
                           ("id", 3, "string", False), ("parameters", 4, "Parameter", True),
                           ("outputs", 5, "Tensor", True), ("raw_output_contents", 6, "bytes", True)],
    "ServerMetadataRequest": [],
    "ServerMetadataResponse": [("name", 1, "string", False), ("version", 2, "string", False),
                               ("extensions", 3, "string", True)],
    "ModelMetadataRequest": [("name", 1, "string", False), ("version", 2, "string", False)],
    "TensorMetadata": [("name", 1, "string", False), ("datatype", 2, "string", False), ("shape", 3, "int64", True)],
    "ModelMetadataResponse": [("name", 1, "string", False), ("versions", 2, "string", True),
                              ("platform", 3, "string", False), ("inputs", 4, "TensorMetadata", True),
                              ("outputs", 5, "TensorMetadata", True)],
}
#: typed contents of an answer without raw outputs, by datatype
CONTENTS = {"FP32": "fp32_contents", "FP64": "fp64_contents", "INT8": "int_contents", "INT16": "int_contents",
            "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
            "UINT32": "uint_contents", "UINT64": "uint64_contents", "BOOL": "bool_contents"}
#: gRPC status -> the HTTP status the REST path would meet; UNAVAILABLE and DEADLINE_EXCEEDED are retried
STATUS = {"OK": 200, "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400,
          "RESOURCE_EXHAUSTED": 413, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
          "UNIMPLEMENTED": 501}


def message_classes() -> dict[str, type]:
    """The classes of :data:`MESSAGES`, built from a descriptor (package ``inference``, proto3)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # protocol: grpc alone uses it

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="advaudit_inference.proto", package="inference", syntax="proto3")
    for name, fields in MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field_name, number, kind, repeated in fields:
            label = field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL
            if kind in MESSAGES:
                message.field.add(name=field_name, number=number, label=label, type=field.TYPE_MESSAGE,
                                  type_name=f".inference.{kind}")
            else:
                message.field.add(name=field_name, number=number, label=label,
                                  type=getattr(field, f"TYPE_{kind.upper()}"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"inference.{name}")) for name in MESSAGES}


@dataclass
class Answer:
    """One call's outcome as the REST path sees an answer: ``status_code`` (:data:`STATUS`), ``content`` (the
    serialized answer, or the server's error message)."""

    status_code: int
    content: bytes
    headers: None = None

    @property
    def ok(self) -> bool:
        return self.status_code == 200


class Unreachable(Exception):
    """No answer: the server is down or did not answer in time (retried like a REST connection error)."""


def status_of(code_name: str) -> int:
    """The HTTP status for a gRPC status code's name (a failure of the model: 500)."""
    return STATUS.get(code_name, 500)


class GrpcChannel:
    """Calls to one server's ``inference.GRPCInferenceService`` at ``settings.url`` (``http://host:port``:
    plaintext; ``https://``: TLS), sending the block's credentials as call metadata."""

    def __init__(self, settings: EndpointSettings, headers: dict[str, str]) -> None:
        try:
            import grpc  # 0.1 s, for protocol: grpc alone
        except ImportError:
            raise AdvauditError("target.endpoint.protocol=grpc needs grpcio and protobuf (pip install "
                                "'grpcio==1.85.3' 'protobuf==6.33.6'), or set protocol: rest") from None
        self.grpc, self.settings = grpc, settings
        self.messages = message_classes()
        address = urlparse(settings.url)
        target = f"{address.hostname}:{address.port or (443 if address.scheme == 'https' else 80)}"
        options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
        self.channel = (grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=options)
                        if address.scheme == "https" else grpc.insecure_channel(target, options=options))
        self.metadata = [(k.lower(), v) for k, v in headers.items()]
        self.calls: dict[str, Any] = {}

    def call(self, method: str, body: bytes) -> Answer:
        """``method`` (``ModelInfer``, ``ModelMetadata``, ``ServerMetadata``) with the serialized request ``body``."""
        if method not in self.calls:
            self.calls[method] = self.channel.unary_unary(SERVICE + method)  # bytes in, bytes out
        try:
            return Answer(200, self.calls[method](body, timeout=self.settings.timeout, metadata=self.metadata))
        except self.grpc.RpcError as error:
            code = error.code()
            if code == self.grpc.StatusCode.DEADLINE_EXCEEDED:
                raise Unreachable(f"no answer within target.endpoint.timeout={self.settings.timeout:g} s") from None
            if code == self.grpc.StatusCode.UNAVAILABLE:
                details = (error.details() or "").lower()
                raise Unreachable("connection refused" if "refused" in details else "server unavailable") from None
            return Answer(status_of(code.name), f"{code.name}: {error.details() or ''}".encode())

    def infer_request(self, x: np.ndarray, name: str, datatype: str, output: str | None) -> bytes:
        """A serialized ``ModelInferRequest`` for the batch ``x`` ``[B, *shape]``: its values as raw little-endian
        bytes. The tensor's bytes are appended to the serialized rest as field 7 (``raw_input_contents``; protobuf
        reads concatenated fields as one message), so they are copied once, into the body."""
        x = np.ascontiguousarray(x, dtype=NUMPY_TYPES[datatype])
        m, s = self.messages, self.settings
        head = m["ModelInferRequest"](
            model_name=s.model, model_version=s.version or "",
            inputs=[m["Tensor"](name=name, datatype=datatype, shape=list(x.shape))],
            outputs=[m["RequestedOutput"](name=output)] if output else []).SerializeToString()
        raw = memoryview(x.astype(x.dtype.newbyteorder("<"), copy=False)).cast("B")
        return b"".join([head, bytes([7 << 3 | 2]), varint(raw.nbytes), raw])  # field 7, length-delimited

    def infer_answer(self, body: bytes, output: str | None) -> tuple[np.ndarray, dict[str, Any]]:
        """``(scores [B, M], answer)`` from a ``ModelInferResponse``, as :func:`~advaudit.models.targets.endpoint.
        protocol.decode_response` gives them for REST (``answer``: ``model_version``, ``parameters``)."""
        reply = self.messages["ModelInferResponse"].FromString(body)
        index = pick_output([t.name for t in reply.outputs], output, f"model {reply.model_name!r}")  # never str(reply):
        # the text form of 20 kB of raw outputs takes milliseconds
        tensor = reply.outputs[index]
        dtype = np.dtype(NUMPY_TYPES.get(tensor.datatype, np.float32)).newbyteorder("<")
        if index < len(reply.raw_output_contents):
            values = np.frombuffer(reply.raw_output_contents[index], dtype=dtype)
        else:
            values = np.asarray(getattr(tensor.contents, CONTENTS.get(tensor.datatype, "fp32_contents")), dtype=dtype)
        parameters = {p.key: value_of(p.value) for p in reply.parameters}
        return rows(values, list(tensor.shape)), {"model_version": reply.model_version or None,
                                                  "parameters": parameters}

    def server(self) -> dict[str, Any]:
        """``ServerMetadata`` as REST's ``GET /v2`` gives it (``{}`` where the server does not answer it)."""
        try:
            answer = self.call("ServerMetadata", b"")
        except Unreachable:
            return {}
        if not answer.ok:
            return {}
        reply = self.messages["ServerMetadataResponse"].FromString(answer.content)
        return {"name": reply.name, "version": reply.version, "extensions": list(reply.extensions)}

    def model(self) -> Answer:
        """``ModelMetadata``, its content the JSON REST's ``GET /v2/models/<model>`` answers with."""
        m = self.messages
        answer = self.call("ModelMetadata", m["ModelMetadataRequest"](name=self.settings.model,
                                                                      version=self.settings.version or "")
                           .SerializeToString())
        if not answer.ok:
            return answer
        reply = m["ModelMetadataResponse"].FromString(answer.content)
        tensors = {key: [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in getattr(reply, key)]
                   for key in ("inputs", "outputs")}
        return Answer(200, orjson.dumps({"name": reply.name, "versions": list(reply.versions),
                                         "platform": reply.platform, **tensors}))

    def close(self) -> None:
        self.channel.close()


def varint(n: int) -> bytes:
    """``n`` >= 0 as a protobuf varint (7 bits a byte, low bits first, the high bit set on all but the last)."""
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def value_of(parameter: Any) -> Any:
    """An ``InferParameter``'s value (the field that is set; ``None`` where none is)."""
    fields = parameter.ListFields()
    return fields[0][1] if fields else None

