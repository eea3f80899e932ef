"""An MLServer runtime that serves a TorchScript or ONNX classifier over the Open Inference Protocol.

Only the server process imports this module (``mlserver start`` names it in ``model-settings.json``,
written by :mod:`advaudit.models.targets.endpoint.serve`); advaudit's client side never does. It is what a
team's own deployment looks like, so the endpoint target is tested against a real server, with the
deployment choices that make a served model differ from its checkpoint (``precision: half``) and
the failures a client must survive (``fail: kill`` ends the server after ``fail_after`` requests,
``fail: error`` answers 500), set in the model's ``parameters.extra``.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.errors import MLServerError
from mlserver.types import InferenceRequest, InferenceResponse, Parameters


class ServedClassifier(MLModel):
    """A classifier file (``.onnx``, or a TorchScript ``.pt``) behind ``/v2/models/<name>/infer``.

    ``parameters.extra``: ``input_name`` and ``input_shape`` (``[C, H, W]``) it accepts, ``precision``
    (``float32`` or ``half``: the model and its inputs in float16, as a deployment might run it),
    ``token_env`` (requests must carry ``Bearer $<token_env>``), ``fail`` / ``fail_after`` (above).
    """

    async def load(self) -> bool:
        extra: dict[str, Any] = dict(self.settings.parameters.extra or {}) if self.settings.parameters else {}
        torch.set_num_threads(int(extra.get("threads", 1)))
        self.input_name = str(extra.get("input_name", "input"))
        self.input_shape = [int(d) for d in extra.get("input_shape", [])]
        self.half = extra.get("precision", "float32") == "half"
        token_env = extra.get("token_env")
        self.token = os.environ.get(str(token_env)) if token_env else None
        self.fail, self.fail_after, self.served = extra.get("fail"), int(extra.get("fail_after", 0)), 0
        path = Path(str(self.settings.parameters.uri))
        if path.suffix == ".onnx":
            import onnxruntime as ort  # ONNX models only

            options = ort.SessionOptions()
            options.intra_op_num_threads = int(extra.get("threads", 1))
            session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
            first = session.get_inputs()[0].name
            self.run = lambda x: session.run(None, {first: x.astype(np.float32)})[0]
        else:
            module = torch.jit.load(str(path), map_location="cpu").eval()
            module = module.half() if self.half else module
            # images NHWC, as advaudit's own CPU targets run them (2x faster convolutions, equal to float rounding)
            self.layout = torch.channels_last if len(self.input_shape) == 3 and not self.half else None
            if self.layout is not None:
                module.to(memory_format=self.layout)
            self.run = lambda x: self._torch(module, x)
        return True

    def _torch(self, module: torch.nn.Module, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            inputs = torch.from_numpy(x)
            inputs = inputs.contiguous(memory_format=self.layout) if self.layout is not None else inputs
            return module(inputs.half() if self.half else inputs.float()).float().numpy()

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        """Scores ``[B, M]`` for the one input; refuses a wrong name, shape or credential as a server would."""
        self.served += 1
        if self.fail == "kill" and self.served > self.fail_after:
            os.kill(os.getpid(), signal.SIGKILL)  # the server dies mid-examination, as a crashed pod does
        if self.fail == "error" and self.served > self.fail_after:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")  # any model failure: HTTP 500
        headers = (payload.parameters.headers if payload.parameters else None) or {}
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            raise MLServerError("missing or wrong bearer token", status_code=401)
        names = [i.name for i in payload.inputs]
        if names != [self.input_name]:
            raise MLServerError(f"unexpected inference input(s) {names} for model '{self.name}'; its input is "
                                f"'{self.input_name}'")
        x = NumpyCodec.decode_input(payload.inputs[0])
        if self.input_shape and list(x.shape[1:]) != self.input_shape:
            raise MLServerError(f"unexpected shape {list(x.shape)} for input '{self.input_name}' of model "
                                f"'{self.name}'; expected [-1, {', '.join(map(str, self.input_shape))}]")
        start = time.perf_counter()
        scores = self.run(np.ascontiguousarray(x, dtype=np.float32))
        seconds = time.perf_counter() - start
        output = NumpyCodec.encode_output("logits", np.asarray(scores, dtype=np.float32))
        return InferenceResponse(model_name=self.name, model_version=self.version, outputs=[output],
                                 parameters=Parameters(inference_seconds=round(seconds, 6)))
