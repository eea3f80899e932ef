"""KServe's Python ``ModelServer`` serving TorchScript or ONNX classifiers over the Open Inference Protocol.

    <python with kserve> -m advaudit.models.targets.endpoint.kserve_runtime <folder>/kserve.json

Only the server process imports this module; :class:`~advaudit.models.targets.endpoint.serve.LocalServer`
(``server="kserve"``) writes ``kserve.json`` (the ports and each model's ``model-settings.json``, as for
MLServer) and starts it. KServe reads the binary tensor data extension on REST (a body of JSON then raw
tensors, ``Inference-Header-Content-Length``) and answers in binary when the request asks for it
(``parameters.binary_data_output``), which MLServer does not; both also serve the protocol's gRPC service
on ``grpc_port``, where KServe keeps raw tensor contents as bytes. The model is
:class:`~advaudit.models.targets.endpoint.served.ServedClassifier`, as on MLServer. KServe pins FastAPI and
pandas versions MLServer cannot share, so it lives in an environment of its own (``make kserve``).
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import kserve
from fastapi import HTTPException
from grpc_interceptor.exceptions import GrpcException, PermissionDenied, Unauthenticated
from kserve.errors import InvalidInput
from kserve.protocol.infer_type import InferInput, InferOutput, InferRequest, InferResponse, RequestedOutput

from advaudit.models.targets.endpoint.served import Refused, ServedClassifier


class KServeClassifier(kserve.Model):
    """One classifier behind KServe's ``/v2/models/<name>/infer``; ``settings`` is its ``model-settings.json``."""

    def __init__(self, settings: dict[str, Any]) -> None:
        super().__init__(settings["name"])
        self.settings = settings
        self.version = str(settings["parameters"].get("version", "1"))

    def load(self) -> bool:
        params = self.settings["parameters"]
        self.classifier = ServedClassifier(self.name, params["uri"], dict(params.get("extra") or {}))
        self.ready = True
        return self.ready

    def get_input_types(self) -> list[dict[str, Any]]:
        return list(self.settings.get("inputs") or [])

    def get_output_types(self) -> list[dict[str, Any]]:
        return [{"name": "logits", "datatype": "FP32", "shape": [-1, -1]}]

    def predict(self, payload: InferRequest, headers: dict[str, str] | None = None,
                response_headers: dict[str, str] | None = None) -> InferResponse:
        """Logits ``[B, M]`` for the one input, binary when the request asks; refusals as HTTP 400 / 401."""
        try:
            self.classifier.check([i.name for i in payload.inputs], (headers or {}).get("authorization"))
            scores, seconds = self.classifier(payload.inputs[0].as_numpy())
        except Refused as refused:
            raise refusal(refused, payload.from_grpc) from None
        output = InferOutput("logits", list(scores.shape), "FP32")
        output.set_data_from_numpy(scores, binary_data=payload.use_binary_outputs)
        return InferResponse(response_id=payload.id or uuid.uuid4().hex, model_name=self.name,
                             model_version=self.version, infer_outputs=[output],
                             parameters={"inference_seconds": f"{seconds:.6f}"},
                             use_binary_outputs=payload.use_binary_outputs)


def refusal(refused: Refused, grpc: bool) -> Exception:
    """What KServe answers a refused request with: 400 (gRPC ``INVALID_ARGUMENT``), else the refusal's HTTP status
    on REST and its gRPC code over gRPC (401 ``UNAUTHENTICATED``, 403 ``PERMISSION_DENIED``: KServe's gRPC service
    answers an ``HTTPException`` ``INTERNAL``, which a client retries as a failing model)."""
    if refused.status == 400:
        return InvalidInput(str(refused))
    kind: type[GrpcException] | None = {401: Unauthenticated, 403: PermissionDenied}.get(refused.status)
    if grpc and kind is not None:
        return kind(details=str(refused))
    return HTTPException(status_code=refused.status, detail=str(refused))


def keep_raw_bytes() -> None:
    """Make KServe keep a binary request's tensors as the bytes they came in (``raw_binary: true`` in ``kserve.json``;
    the benchmark's what-if, never the default).

    KServe 0.21 reads the binary extension, then turns each tensor into a Python list, element by element
    (``InferRequest.from_bytes`` calls ``set_data_from_numpy(..., binary_data=False)``), and the model's
    ``as_numpy()`` turns it back: slower than its JSON path. Keeping the bytes, ``as_numpy()`` is
    ``np.frombuffer``, as a server that reads the extension in C++ (Triton) does.
    """
    original = InferRequest.from_bytes.__func__

    def from_bytes(cls: type, req_bytes: bytes, json_length: int, model_name: str) -> InferRequest:
        head = json.loads(req_bytes[:json_length])
        inputs, start = [], json_length
        for spec in head["inputs"]:
            size = (spec.get("parameters") or {}).get("binary_data_size")
            if size is None:  # a tensor given as JSON inside a binary request: KServe's own path
                return original(cls, req_bytes, json_length, model_name)
            tensor = InferInput(name=spec["name"], shape=spec["shape"], datatype=spec["datatype"],
                                parameters=spec.get("parameters"))
            tensor._raw_data, start = req_bytes[start:start + int(size)], start + int(size)
            inputs.append(tensor)
        outputs = [RequestedOutput(name=o["name"], parameters=o.get("parameters")) for o in head.get("outputs") or []]
        return cls(model_name=model_name, request_id=head.get("id"), parameters=head.get("parameters"),
                   infer_inputs=inputs, request_outputs=outputs or None)

    InferRequest.from_bytes = classmethod(from_bytes)


def main(config: str) -> None:
    """Start the server of ``config`` (``kserve.json``) and serve until it is stopped."""
    setup = json.loads(Path(config).read_text())
    if setup.get("raw_binary"):
        keep_raw_bytes()
    limit = setup.get("grpc_max_message_length")
    if limit:  # ModelServer reads these from its command line's defaults when the gRPC server starts
        kserve.model_server.args.grpc_max_receive_message_length = int(limit)
        kserve.model_server.args.grpc_max_send_message_length = int(limit)
    models = [KServeClassifier(settings) for settings in setup["models"]]
    for model in models:
        model.load()
    kserve.ModelServer(http_port=int(setup["http_port"]), grpc_port=int(setup["grpc_port"]), workers=1,
                       enable_grpc=True, enable_docs_url=False,
                       enable_latency_logging=False).start(models)


if __name__ == "__main__":
    main(sys.argv[1])
