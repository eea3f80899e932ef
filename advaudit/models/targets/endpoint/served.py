"""What a served classifier does on the server, whichever server runs it (MLServer or KServe).

Only server processes import this module (through :mod:`~advaudit.models.targets.endpoint.runtime` for
MLServer and :mod:`~advaudit.models.targets.endpoint.kserve_runtime` for KServe); advaudit's client side
never does. :class:`ServedClassifier` loads a TorchScript or ONNX file, checks a request as a
deployment would (input name, shape, bearer token) and scores a batch, timing its own inference;
``extra`` holds the deployment choices (``precision: half``) and the failures a client must survive
(``fail: kill`` ends the server after ``fail_after`` requests, ``fail: error`` fails every request).

The server keeps the memory a request frees for the next one (:func:`advaudit.runtime.keep_freed_memory`): glibc's
default hands large freed blocks back to the system, and the next request's activations page-fault
them in again (about 12,000 faults, half the inference time, for 500 28-px images through a small CNN).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from advaudit.runtime import configure_memory


class Refused(Exception):
    """A request the model refuses; ``status`` is the HTTP status a server answers with (400, 401)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ServedClassifier:
    """A classifier file (``.onnx``, or a TorchScript ``.pt``) as a server runs it.

    ``extra``: ``input_name`` and ``input_shape`` (``[C, H, W]``) it accepts, ``precision`` (``float32``
    or ``half``: the model and its inputs in float16, as a deployment might run it), ``threads`` (torch's
    or onnxruntime's, default 1), ``memory`` (``keep``, the default, or ``release``, the C library's default,
    which returns freed memory to the system: :func:`advaudit.runtime.configure_memory`; the setting is the
    process's, so one model keeping memory keeps it for every model of the server), ``token_env`` (requests
    must carry ``Bearer $<token_env>``), ``fail`` / ``fail_after`` (the module docstring).
    """

    def __init__(self, name: str, path: str | Path, extra: dict[str, Any]) -> None:
        self.name = name
        threads = int(extra.get("threads", 1))
        torch.set_num_threads(threads)
        memory = str(extra.get("memory", "keep"))
        self.kept_memory = configure_memory(memory)
        self.input_name = str(extra.get("input_name", "input"))
        self.input_shape = [int(d) for d in extra.get("input_shape", [])]
        self.half = extra.get("precision", "float32") == "half"
        token_env = extra.get("token_env")
        self.token = os.environ.get(str(token_env)) if token_env else None
        self.fail, self.fail_after, self.served = extra.get("fail"), int(extra.get("fail_after", 0)), 0
        self.layout: torch.memory_format | None = None
        self.run = self._onnx(Path(path), threads) if Path(path).suffix == ".onnx" else self._script(Path(path))

    def _onnx(self, path: Path, threads: int) -> Callable[[np.ndarray], np.ndarray]:
        import onnxruntime as ort  # ONNX models only

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        first = session.get_inputs()[0].name
        return lambda x: session.run(None, {first: x.astype(np.float32)})[0]

    def _script(self, path: Path) -> Callable[[np.ndarray], np.ndarray]:
        module = torch.jit.load(str(path), map_location="cpu").eval()
        module = module.half() if self.half else module
        # images NHWC, as advaudit's own CPU targets run them (2x faster convolutions, equal to float rounding)
        self.layout = torch.channels_last if len(self.input_shape) == 3 and not self.half else None
        if self.layout is not None:
            module.to(memory_format=self.layout)

        def run(x: np.ndarray) -> np.ndarray:
            with torch.inference_mode():  # as the local target scores
                inputs = torch.from_numpy(x)
                inputs = inputs.contiguous(memory_format=self.layout) if self.layout is not None else inputs
                return module(inputs.half() if self.half else inputs.float()).float().numpy()
        return run

    def check(self, names: list[str], authorization: str | None) -> None:
        """Count the request and refuse it as a deployment would: no or a wrong token (401), another input
        name (400); ``fail`` kills the server or fails the request here."""
        self.served += 1
        if self.fail == "kill" and self.served > self.fail_after:
            os.kill(os.getpid(), signal.SIGKILL)  # the server dies mid-examination, as a crashed pod does
        if self.fail == "error" and self.served > self.fail_after:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")  # any model failure: HTTP 500
        if self.token is not None and authorization != f"Bearer {self.token}":
            raise Refused("missing or wrong bearer token", 401)
        if names != [self.input_name]:
            raise Refused(f"unexpected inference input(s) {names} for model '{self.name}'; its input is "
                          f"'{self.input_name}'")

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        """``(logits [B, M] float32, seconds of the model's own inference)`` for ``x`` ``[B, *input_shape]``."""
        if self.input_shape and list(x.shape[1:]) != self.input_shape:
            raise Refused(f"unexpected shape {list(x.shape)} for input '{self.input_name}' of model "
                          f"'{self.name}'; expected [-1, {', '.join(map(str, self.input_shape))}]")
        start = time.perf_counter()
        scores = self.run(np.ascontiguousarray(x, dtype=np.float32))
        return np.asarray(scores, dtype=np.float32), time.perf_counter() - start
