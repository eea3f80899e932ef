"""An MLServer runtime that serves a TorchScript or ONNX classifier over the Open Inference Protocol.

Only the server process imports this module (``mlserver start`` names it in ``model-settings.json``,
written by :mod:`advaudit.models.targets.endpoint.serve`); advaudit's client side never does. It is what a
team's own deployment looks like, so the endpoint target is tested against a real server; the model,
its deployment choices and the failures it can stage are :class:`~advaudit.models.targets.endpoint.served.
ServedClassifier`'s, set in the model's ``parameters.extra``.

MLServer 1.7 gives only 400, 404, 422 and 500 their gRPC status codes; any other refusal becomes ``UNKNOWN``,
which a client cannot tell from a failing model. Importing this module adds 401 (``UNAUTHENTICATED``) and 403
(``PERMISSION_DENIED``), so a request without the bearer token is refused over gRPC as an authenticating
gateway in front of a deployment refuses it, and as REST's 401 refuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.errors import MLServerError
from mlserver.grpc.utils import STATUS_CODE_MAPPING
from mlserver.types import InferenceRequest, InferenceResponse, Parameters

from advaudit.models.targets.endpoint.served import Refused
from advaudit.models.targets.endpoint.served import ServedClassifier as Classifier

STATUS_CODE_MAPPING.setdefault(401, grpc.StatusCode.UNAUTHENTICATED)  # read at each refusal (module docstring)
STATUS_CODE_MAPPING.setdefault(403, grpc.StatusCode.PERMISSION_DENIED)


class ServedClassifier(MLModel):
    """A classifier file (``.onnx``, or a TorchScript ``.pt``) behind ``/v2/models/<name>/infer``."""

    async def load(self) -> bool:
        extra: dict[str, Any] = dict(self.settings.parameters.extra or {}) if self.settings.parameters else {}
        self.classifier = Classifier(self.name, Path(str(self.settings.parameters.uri)), extra)
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        """Scores ``[B, M]`` for the one input; refuses a wrong name, shape or credential as a server would."""
        headers = (payload.parameters.headers if payload.parameters else None) or {}
        try:
            self.classifier.check([i.name for i in payload.inputs], headers.get("authorization"))
            scores, seconds = self.classifier(NumpyCodec.decode_input(payload.inputs[0]))
        except Refused as refused:
            raise MLServerError(str(refused), status_code=refused.status) from None
        output = NumpyCodec.encode_output("logits", np.asarray(scores, dtype=np.float32))
        return InferenceResponse(model_name=self.name, model_version=self.version, outputs=[output],
                                 parameters=Parameters(inference_seconds=f"{seconds:.6f}"))
