"""The deployed model as a target: a model on a server that speaks the Open Inference Protocol.

KServe, Triton, MLServer and others serve models behind the same REST protocol (``GET
/v2/models/{name}`` for metadata, ``POST /v2/models/{name}/infer`` for scores). A ``target`` block
with ``endpoint: {url, model, ...}`` (:mod:`~advaudit.models.targets.endpoint.settings`) audits such a model
as a black box: the input's name, datatype and shape come from the model's metadata unless the
block gives them, batches go out as JSON or binary tensors (:mod:`~advaudit.models.targets.endpoint.protocol`),
or as raw bytes over the protocol's gRPC service (``protocol: grpc``:
:mod:`~advaudit.models.targets.endpoint.grpc_protocol`)
through :class:`~advaudit.models.targets.endpoint.client.EndpointClient`, and the outputs become class
probabilities by the same rules as every other target (``class_names``, ``class_map``, ``outputs``).
No code runs on this side; loading reads metadata and sends a probe batch.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from advaudit.errors import require
from advaudit.models.targets.endpoint.client import CLIENTS, EndpointClient
from advaudit.models.targets.endpoint.settings import INPUT_DATATYPES, EndpointSettings, parse_endpoint

__all__ = ["CLIENTS", "EndpointClient", "EndpointSettings", "endpoint_records", "load", "parse_endpoint"]


def load(spec: Any) -> tuple[EndpointClient, Callable[[np.ndarray], np.ndarray]]:
    """The client and the prediction function for ``spec.endpoint``; fills ``spec.input_shape`` from the
    model's metadata where the block does not give it.

    Raises:
        AdvauditError: one line, when the server cannot be reached, has no such model, or its input
            cannot be told from the metadata and the block.
    """
    settings = parse_endpoint(spec.endpoint)
    client = EndpointClient(settings)
    meta = client.connect()
    names = [name for name, _, _ in meta.inputs]
    if settings.input_name is not None and names:
        require(settings.input_name in names, f"target.endpoint.input_name={settings.input_name!r} is not an input of "
                f"{settings.address} (its inputs: {names}); use one of them, or drop the key to read it from there")
    require(settings.input_name is not None or len(names) == 1, f"{settings.address} lists {len(names)} inputs "
            f"{names}; name the one that takes the image or row with target.endpoint.input_name")
    name = settings.input_name or names[0]
    listed = next(((dtype, shape) for n, dtype, shape in meta.inputs if n == name), (None, []))
    datatype = settings.datatype or listed[0] or "FP32"
    require(datatype in INPUT_DATATYPES, f"{settings.address}'s input {name!r} takes {datatype}; the endpoint target "
            f"sends {', '.join(INPUT_DATATYPES)} (set target.endpoint.datatype if the server converts)")
    if spec.input_shape is None:
        shape = list(listed[1][1:])
        require(bool(shape) and all(d > 0 for d in shape), f"{settings.address} gives the input {name!r} the shape "
                f"{listed[1]}, which does not fix one input's shape; set target.input_shape (e.g. [1, 28, 28])")
        spec.input_shape = shape

    def predict(x: np.ndarray) -> np.ndarray:
        return client.predict(np.asarray(x), name, datatype)

    return client, predict


def endpoint_records() -> list[dict[str, Any]]:
    """What every endpoint this process queried was sent and how long it took (:meth:`EndpointClient.record`)."""
    return [client.record() for client in CLIENTS]
