"""One model on an Open Inference Protocol server, as a prediction function ``numpy [B, ...] -> numpy [B, M]``.

:class:`EndpointClient` reads the server's and the model's metadata once, then sends each batch to
``POST <url>/v2/models/<model>/infer`` (or, with ``protocol: grpc``, to the gRPC service's ``ModelInfer``:
:mod:`~advaudit.models.targets.endpoint.grpc_protocol`) in requests of at most ``max_batch`` inputs,
``concurrency`` at a time, retrying connection errors, timeouts and 5xx answers ``retries`` times with a
doubling backoff. What a failure means is said in one line with its fix (:func:`refusal`). It counts what it sends
(requests, inputs: every input is one query of the audit's budget) and the seconds the audit waited
on the server; :meth:`EndpointClient.record` is that account, with the model version the server
reported, and never holds a credential.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np
import requests

from advaudit.errors import AdvauditError, require
from advaudit.models.targets.endpoint.grpc_protocol import GrpcChannel, Unreachable
from advaudit.models.targets.endpoint.protocol import (BINARY_EXTENSION, ModelMetadata, decode_response, encode_request,
                                               error_text, parse_metadata)
from advaudit.models.targets.endpoint.settings import EndpointSettings

#: every client made in this process, so a task can report the endpoints its audit queried
CLIENTS: list["EndpointClient"] = []
RETRIED = (500, 502, 503, 504)
#: servers (``GET /v2``'s name) known to read JSON only: ``binary: auto`` sends them JSON without trying
JSON_ONLY = ("mlserver",)


def credentials(settings: EndpointSettings) -> dict[str, str]:
    """The headers the block's environment variables hold (a bearer token; a JSON object of headers)."""
    headers: dict[str, str] = {}
    if settings.headers_env:
        try:
            extra = json.loads(os.environ[settings.headers_env])
        except json.JSONDecodeError:
            extra = None
        require(isinstance(extra, dict), f"${settings.headers_env} (target.endpoint.headers_env) must hold a JSON "
                'object of headers, e.g. {"X-Api-Key": "..."}')
        headers.update({str(k): str(v) for k, v in extra.items()})
    if settings.token_env:
        headers["Authorization"] = f"Bearer {os.environ[settings.token_env]}"
    return headers


class EndpointClient:
    """Batches to one model on a server; see the module docstring. ``connect()`` reads the metadata."""

    def __init__(self, settings: EndpointSettings) -> None:
        self.settings = settings
        self._headers = credentials(settings)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="endpoint")
        self.metadata: ModelMetadata | None = None
        self.server: dict[str, Any] = {}
        self.model_version: str | None = None
        self.server_seconds: float | None = None  # the server's own inference time, where it reports it
        self.binary = settings.binary != "false"  # auto: binary until the server shows it does not read it
        # whether the server is known to read what self.binary says (gRPC: raw bytes are the protocol's own)
        self._binary_known = settings.binary == "false" or settings.protocol == "grpc"
        self._grpc = GrpcChannel(settings, self._headers) if settings.protocol == "grpc" else None
        self.binary_note: str | None = None
        self.stats = {"requests": 0, "inputs": 0, "retries": 0, "seconds_waiting": 0.0, "seconds_encoding": 0.0,
                      "seconds_decoding": 0.0, "bytes_sent": 0}
        CLIENTS.append(self)

    # -- metadata ----------------------------------------------------------------------------------
    def connect(self) -> ModelMetadata:
        """Read ``GET /v2`` (the server: name, version, extensions) and ``GET /v2/models/<model>``."""
        s = self.settings
        self.server = self._server_metadata()
        if not self._binary_known:  # REST, binary: auto or true
            if BINARY_EXTENSION in (self.server.get("extensions") or []):
                self._binary_known = True  # a server that lists the extension (Triton) is taken at its word
            elif s.binary == "auto" and self.server.get("name") in JSON_ONLY:  # no probe that would fail on its log
                self.binary, self._binary_known = False, True
                self.binary_note = f"{self.server['name']} does not read binary tensors; sent JSON"
        answer = (self._retried(self._grpc.model) if self._grpc is not None
                  else self._send("GET", s.model_path, None, {}))
        if not answer.ok:
            raise refusal(s, answer.status_code, error_text(answer.content), "metadata", None)
        self.metadata = parse_metadata(answer.content, s.address)
        self.model_version = s.version or (self.metadata.versions[-1] if self.metadata.versions else None)
        return self.metadata

    def _server_metadata(self) -> dict[str, Any]:
        """``GET /v2`` (gRPC: ``ServerMetadata``): the server's name, version and extensions; ``{}`` if it does not
        say."""
        if self._grpc is not None:
            return self._grpc.server()
        try:
            answer = self._send("GET", "/v2", None, {})
            return answer.json() if answer.ok else {}
        except (AdvauditError, ValueError):
            return {}

    # -- inference ---------------------------------------------------------------------------------
    def predict(self, x: np.ndarray, name: str, datatype: str) -> np.ndarray:
        """Scores ``[B, M]`` for the batch ``x`` ``[B, *shape]``, sent in requests of at most ``max_batch``."""
        start = time.perf_counter()
        size = self.settings.max_batch
        chunks = [x[i:i + size] for i in range(0, len(x), size)]
        try:  # one request (or one at a time) goes from this thread: no hand-off to the pool and back
            parts = ([self._infer(c, name, datatype) for c in chunks] if len(chunks) == 1 or self.settings.concurrency
                     == 1 else list(self._pool.map(lambda c: self._infer(c, name, datatype), chunks)))
        finally:
            with self._lock:
                self.stats["seconds_waiting"] += time.perf_counter() - start
        return np.concatenate(parts) if parts else np.empty((0, 0), dtype=np.float32)

    def _infer(self, x: np.ndarray, name: str, datatype: str) -> np.ndarray:
        s = self.settings
        binary = self.binary
        answer, sent = self._post(x, name, datatype, binary, probe=binary and not self._binary_known)
        if binary and not self._binary_known and answer.status_code not in (200, 401, 403, 404):
            answer, sent = self._binary_refused(answer, x, name, datatype)
        elif binary and answer.ok:
            self._binary_known = True  # the server read a binary request: no more probes
        if not answer.ok:
            raise refusal(s, answer.status_code, error_text(answer.content), "infer", (name, list(x.shape), datatype))
        received = time.perf_counter()
        scores, reply = (self._grpc.infer_answer(answer.content, s.output_name) if self._grpc is not None
                         else decode_response(answer.content, answer.headers, s.output_name))
        version = reply.get("model_version")
        reported = (reply.get("parameters") or {}).get("inference_seconds")  # a server that reports its own time
        # (advaudit's MLServer and KServe runtimes do: advaudit.models.targets.endpoint.served)
        require(len(scores) == len(x), f"the endpoint {s.address} answered {len(scores)} score rows for {len(x)} "
                "inputs; the model must return one row per input")
        with self._lock:
            self.stats["requests"] += 1
            self.stats["inputs"] += len(x)
            self.stats["bytes_sent"] += sent[0]
            self.stats["seconds_encoding"] += sent[1]
            self.stats["seconds_decoding"] += time.perf_counter() - received
            self.model_version = str(version) if version is not None else self.model_version
            seconds = _seconds(reported)
            if seconds is not None:
                self.server_seconds = (self.server_seconds or 0.0) + seconds
        return scores

    def _post(self, x: np.ndarray, name: str, datatype: str, binary: bool, probe: bool = False
              ) -> tuple[requests.Response, tuple[int, float]]:
        """One inference request for ``x``; ``(answer, (bytes sent, seconds encoding))``. A ``probe`` (binary
        tensors to a server not yet known to read them) is not retried on a 5xx answer: a server that cannot
        read them may answer so (MLServer does)."""
        started = time.perf_counter()
        if self._grpc is not None:
            body = self._grpc.infer_request(x, name, datatype, self.settings.output_name)
            encoded = time.perf_counter() - started
            return self._retried(lambda: self._grpc.call("ModelInfer", body)), (len(body), encoded)
        body, headers = encode_request(x, name, datatype, binary, self.settings.output_name)
        encoded = time.perf_counter() - started
        return self._send("POST", f"{self.settings.model_path}/infer", body, headers, probe), (
            len(body), encoded)

    def _binary_refused(self, answer: requests.Response, x: np.ndarray, name: str, datatype: str
                        ) -> tuple[requests.Response, tuple[int, float]]:
        """The first binary request was refused: the same batch goes as JSON. Refused again, the JSON answer
        says why (the input, not the encoding); answered, the server does not read binary tensors: ``auto``
        sends JSON from now on (the record says so), ``binary: true`` is refused in one line."""
        s = self.settings
        problem = f"HTTP {answer.status_code}: {error_text(answer.content)[:160]}"
        retry = self._post(x, name, datatype, False)
        if not retry[0].ok:
            return retry
        require(s.binary != "true", f"the endpoint {s.address} does not read binary tensors (the binary tensor data "
                f"extension): it refused them ({problem}) and answered the same batch as JSON; set "
                "target.endpoint.binary: false (or auto, which finds this out)")
        with self._lock:
            self.binary, self._binary_known = False, True
            self.binary_note = f"binary tensors refused ({problem}); sent JSON"
        return retry

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str], probe: bool = False
              ) -> requests.Response:
        """One REST request, retried as :meth:`_retried` says."""
        s = self.settings
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        url = f"{s.url.rstrip('/')}{path}"
        return self._retried(lambda: session.request(method, url, data=body, headers={**self._headers, **headers},
                                                     timeout=s.timeout), probe)

    def _retried(self, attempt: Callable[[], Any], probe: bool = False) -> Any:
        """``attempt()`` (one request: an answer with ``status_code``), retried on connection errors, timeouts and
        5xx answers (a ``probe``'s 5xx answer is returned at once); the last answer returned."""
        s = self.settings
        first = time.perf_counter()
        for tried in range(s.retries + 1):
            if tried:
                with self._lock:
                    self.stats["retries"] += 1
                time.sleep(s.backoff * 2 ** (tried - 1))
            try:
                answer = attempt()
            except requests.Timeout:
                problem = f"no answer within target.endpoint.timeout={s.timeout:g} s"
                continue
            except requests.ConnectionError as error:
                problem = _connection_problem(error)
                continue
            except Unreachable as error:
                problem = str(error)
                continue
            if answer.status_code not in RETRIED or tried == s.retries or probe:
                return answer
            problem = f"HTTP {answer.status_code}"
        waited = time.perf_counter() - first
        raise AdvauditError(f"the endpoint {s.address} stopped answering ({problem}) after {s.retries + 1} tries over "
                            f"{waited:.1f} s; start the server again (or fix target.endpoint.url), then rerun the same "
                            "command: an examination resumes from its last finished step")

    def sent_as(self) -> str:
        """How the tensors went: ``raw tensors over gRPC``, ``binary tensors`` or ``JSON``."""
        return "raw tensors over gRPC" if self._grpc is not None else ("binary tensors" if self.binary else "JSON")

    def record(self) -> dict[str, Any]:
        """Plain data for ``result.json`` and reports: where, which version, what was sent, how long it waited."""
        server = {k: self.server.get(k) for k in ("name", "version") if self.server.get(k)}
        stats = {k: round(v, 3) if isinstance(v, float) else v for k, v in self.stats.items()}
        return {"endpoint": self.settings.address, "model": self.settings.model, "model_version": self.model_version,
                "server": server, "binary": self.binary, "sent_as": self.sent_as(),
                **({"binary_note": self.binary_note} if self.binary_note else {}), **stats,
                **({"server_seconds": round(self.server_seconds, 3)} if self.server_seconds is not None else {}),
                "settings": {k: v for k, v in self.settings.record().items() if k not in ("url", "model")}}


def _seconds(value: Any) -> float | None:
    """A reported time as a number: a number, or a string holding one (gRPC parameters carry no floats)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value) if isinstance(value, (int, float, str)) else None
    except ValueError:
        return None


def _connection_problem(error: requests.ConnectionError) -> str:
    text = str(error)
    for known in ("Connection refused", "Connection reset", "Name or service not known", "Remote end closed"):
        if known.lower() in text.lower():
            return known.lower()
    return "connection failed"


def refusal(s: EndpointSettings, status: int, message: str, what: str,
            sent: tuple[str, list[int], str] | None) -> AdvauditError:
    """The one line that says why the server refused a request and which key of the block fixes it."""
    head = f"the endpoint {s.address} refused the {what} request (HTTP {status}: {message[:240]})"
    if status in (401, 403):
        where = f"${s.token_env}" if s.token_env else "an environment variable named by target.endpoint.token_env"
        return AdvauditError(f"{head}; give the server's credentials in {where} (or target.endpoint.headers_env)")
    if status == 404:
        return AdvauditError(f"{head}; check target.endpoint.model (the model's name on the server)"
                             + (" and target.endpoint.version" if s.version else ""))
    if status >= 500:
        return AdvauditError(f"{head} on {s.retries + 1} tries; the model fails on the server: read the server's log "
                             "(the model's error is there), fix the deployment, then rerun the same command")
    if sent is None:
        return AdvauditError(f"{head}; check target.endpoint.url and target.endpoint.model")
    if status == 413:
        return AdvauditError(f"{head}; a request of {sent[1][0]} inputs is larger than the server takes: lower "
                             "target.endpoint.max_batch")
    name, shape, datatype = sent
    lowered = message.lower()
    if "shape" in lowered:
        return AdvauditError(f"{head}; the request sent shape {shape}: set target.input_shape to the shape the model "
                             f"takes, without the batch dimension (GET {s.address} lists it)")
    if "datatype" in lowered or "dtype" in lowered:
        return AdvauditError(f"{head}; the request sent {datatype}: set target.endpoint.datatype to the input's "
                             f"datatype (GET {s.address} lists it)")
    if name.lower() in lowered or "input" in lowered:
        return AdvauditError(f"{head}; the request named the input {name!r}: set target.endpoint.input_name to the "
                             f"model's input name (GET {s.address} lists it), or drop it to read it from there")
    return AdvauditError(f"{head}; check target.input_shape, target.endpoint.input_name and target.endpoint.datatype "
                         f"against the model's metadata (GET {s.address})")
