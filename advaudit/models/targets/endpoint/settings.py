"""``target.endpoint``: a model behind a server that speaks the Open Inference Protocol (KServe v2 REST).

The block names the server and the model; everything else has a default here, the one place it lives::

    target:
      endpoint: {url: http://localhost:8080, model: fmnist}   # + version, token_env, ... (below)
      class_names: [t-shirt, trouser, ...]    # one per model output, as for every target
      normalization: model                    # the server's model takes raw [0, 1] inputs
      # input_shape: [1, 28, 28]              # optional: from GET /v2/models/{model} when not given

Credentials are never written in the block: ``token_env`` and ``headers_env`` name environment variables
whose values are sent (a bearer token; a JSON object of headers) and appear nowhere else.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from typing import Any

from advaudit.confutil import refuse_unknown_keys
from advaudit.errors import require

#: the Open Inference Protocol's tensor datatypes the endpoint target can send (inputs)
INPUT_DATATYPES = ("FP32", "FP64", "FP16")
BINARY_CHOICES = ("auto", "true", "false")
PROTOCOLS = ("rest", "grpc")


@dataclass
class EndpointSettings:
    """What reaching one model on an inference server takes; defaults suit a server on the same network.

    Attributes:
        url: the server's base URL (``http://host:port``; the ``/v2/...`` paths are added); with ``protocol:
            grpc`` its gRPC port (``http://``: plaintext, ``https://``: TLS).
        protocol: ``rest`` (HTTP/JSON, the default) or ``grpc`` (the protocol's gRPC service, tensors as raw
            bytes: :mod:`~advaudit.models.targets.endpoint.grpc_protocol`).
        model: the model's name on the server.
        version: the model version to ask for (``/versions/{version}``); ``None``: the server's default.
        input_name / datatype: the input tensor's name and datatype; ``None``: from the model's metadata.
        output_name: which output holds the scores; ``None``: the first the server returns.
        binary: send tensors with the binary tensor data extension: ``auto`` (tried on the first request;
            JSON from then on where the server refuses it), ``true`` (a server that cannot read it is
            refused in one line) or ``false`` (JSON).
        timeout: seconds one request may take.
        retries: further tries after a connection error, a timeout or a 5xx answer.
        backoff: seconds before the first retry, doubled for each next one.
        concurrency: requests in flight at once.
        max_batch: inputs per request (a larger batch is split).
        token_env: an environment variable holding a bearer token (``Authorization: Bearer ...``).
        headers_env: an environment variable holding a JSON object of further headers.
    """

    url: str = ""
    model: str = ""
    protocol: str = "rest"
    version: str | None = None
    input_name: str | None = None
    datatype: str | None = None
    output_name: str | None = None
    binary: str = "auto"
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    concurrency: int = 2
    max_batch: int = 256
    token_env: str | None = None
    headers_env: str | None = None

    @property
    def model_path(self) -> str:
        """``/v2/models/{model}`` or ``/v2/models/{model}/versions/{version}``."""
        base = f"/v2/models/{self.model}"
        return f"{base}/versions/{self.version}" if self.version else base

    @property
    def address(self) -> str:
        """The model's address, as reports name it: ``<url>/v2/models/<model>[/versions/<v>]``."""
        return f"{self.url.rstrip('/')}{self.model_path}"

    def record(self) -> dict[str, Any]:
        """The settings as plain data (names of environment variables only, never their values)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def parse_endpoint(node: Any) -> EndpointSettings:
    """:class:`EndpointSettings` from ``target.endpoint``; unknown keys and impossible values refused.

    Raises:
        AdvauditError: one line naming the key and the fix.
    """
    require(isinstance(node, dict), "target.endpoint must be a block {url: http://host:port, model: <name on the "
            f"server>}}, not {node!r}")
    refuse_unknown_keys(node, [f.name for f in fields(EndpointSettings)], "target.endpoint", "an endpoint setting")
    data = dict(node)
    if isinstance(data.get("binary"), bool):
        data["binary"] = "true" if data["binary"] else "false"
    for key in ("version", "input_name", "datatype", "output_name"):
        if data.get(key) is not None:
            data[key] = str(data[key])
    settings = EndpointSettings(**data)
    _check(settings)
    return settings


def _check(s: EndpointSettings) -> None:
    require(isinstance(s.url, str) and s.url.startswith(("http://", "https://")),
            f"target.endpoint.url={s.url!r}; give the server's address, e.g. http://localhost:8080")
    require(isinstance(s.model, str) and bool(s.model), "target.endpoint.model is required: the model's name on the "
            "server (GET <url>/v2/models/<name> answers with its metadata)")
    require(s.binary in BINARY_CHOICES, f"target.endpoint.binary={s.binary!r}; use auto, true or false")
    require(s.protocol in PROTOCOLS, f"target.endpoint.protocol={s.protocol!r}; use rest or grpc (the server's gRPC "
            "port in target.endpoint.url)")
    require(not (s.protocol == "grpc" and s.binary == "false"), "target.endpoint.binary=false is for REST: over gRPC "
            "tensors go as raw bytes; drop binary, or set protocol: rest to send JSON")
    require(s.datatype is None or s.datatype in INPUT_DATATYPES, f"target.endpoint.datatype={s.datatype!r}; the "
            f"endpoint target sends one of {', '.join(INPUT_DATATYPES)}")
    for key in ("timeout", "backoff"):
        value = getattr(s, key)
        require(isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and (
            key != "timeout" or value > 0), f"target.endpoint.{key}={value!r}; give seconds (a number"
            + (" > 0)" if key == "timeout" else " >= 0)"))
    for key, low in (("retries", 0), ("concurrency", 1), ("max_batch", 1)):
        value = getattr(s, key)
        require(isinstance(value, int) and not isinstance(value, bool) and value >= low,
                f"target.endpoint.{key}={value!r}; give a whole number >= {low}")
    for key in ("token_env", "headers_env"):
        name = getattr(s, key)
        if name is not None:
            require(isinstance(name, str) and name.isidentifier() and not name.startswith(("Bearer", "ey")),
                    f"target.endpoint.{key} names an environment variable (e.g. MY_ENDPOINT_TOKEN) that holds the "
                    "secret; never write the secret itself in the block")
            require(name in os.environ, f"target.endpoint.{key}={name}, but ${name} is not set; export it (the "
                    "value is sent to the server and written nowhere)")
