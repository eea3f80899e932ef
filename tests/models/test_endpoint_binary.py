"""Binary tensors (the Open Inference Protocol's binary tensor data extension) against real servers.

KServe's ``ModelServer`` (``kserve_server``) reads them and answers in kind: the endpoint target finds
that out by itself and scores as the local model does; a binary request and its answer round-trip
through the real server to the model's own logits. MLServer (``oip_server``) does not read them: asked
for binary tensors, the target says so in one line; left to ``auto``, it sends JSON and the record says why.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import requests
import torch

import advaudit
from advaudit.errors import AdvauditError
from advaudit.models.targets.endpoint import client as client_module
from advaudit.models.targets.endpoint import endpoint_records
from advaudit.models.targets.endpoint.protocol import HEADER_LENGTH, decode_response, encode_request
from advaudit.models.targets.endpoint.serve import LocalServer
from tests.models.endpoint_fixtures import FMNIST_SHAPE, endpoint_block
from tests.models.test_endpoint import local_block


def test_kserve_gets_binary_tensors_by_itself_and_scores_as_the_local_model(kserve_server: LocalServer) -> None:
    x = torch.rand(300, *FMNIST_SHAPE, generator=torch.Generator().manual_seed(2))
    local = advaudit.load_target(local_block(kserve_server)).predict_proba(x)
    served = {}
    for model in ("fmnist", "fmnist-onnx"):
        target = advaudit.load_target(endpoint_block(kserve_server, model, endpoint={"max_batch": 128}))
        served[model] = target.predict_proba(x)
        assert served[model].shape == (300, 10) and float((served[model] - local).abs().max()) <= 1e-6
        record = endpoint_records()[-1]
        assert record["binary"] is True and "binary_note" not in record  # KServe does not list the extension
        assert record["server"]["name"] == "kserve" and record["inputs"] == 2 + 8 + 300
        assert record["bytes_sent"] < 310 * 28 * 28 * 4 + 4 * 400  # raw float32 and a short JSON header per request
    block = endpoint_block(kserve_server, "fmnist", endpoint={"binary": False, "max_batch": 128})
    as_json = advaudit.load_target(block)
    assert torch.equal(as_json.predict_proba(x), served["fmnist"])  # JSON writes each float32 exactly: the same scores
    assert endpoint_records()[-1]["binary"] is False


def test_a_binary_request_round_trips_through_the_real_server_to_the_models_logits(kserve_server: LocalServer) -> None:
    x = np.random.default_rng(3).random((5, *FMNIST_SHAPE), dtype=np.float32)
    body, headers = encode_request(x, "input", "FP32", binary=True)
    assert len(body) == int(headers[HEADER_LENGTH]) + x.nbytes  # the JSON header, then the raw tensor
    answer = requests.post(f"{kserve_server.url}/v2/models/fmnist/infer", data=body, headers=headers, timeout=20)
    assert answer.ok, answer.text
    length = int(answer.headers[HEADER_LENGTH])  # the answer is binary too: JSON header, then 5 x 10 float32
    assert "data" not in json.loads(answer.content[:length])["outputs"][0] and len(answer.content) == length + 200
    scores, reply = decode_response(answer.content, answer.headers, None)
    with torch.no_grad():
        expected = kserve_server.net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(scores, expected, atol=1e-5, rtol=0)
    assert reply["model_version"] == "1" and float(reply["parameters"]["inference_seconds"]) > 0
    plain, plain_headers = encode_request(x, "input", "FP32", binary=False)
    as_json = requests.post(f"{kserve_server.url}/v2/models/fmnist/infer", data=plain, headers=plain_headers,
                            timeout=20)
    assert np.array_equal(decode_response(as_json.content, as_json.headers, None)[0], scores)


def test_a_refusal_under_binary_names_the_input_not_the_encoding(kserve_server: LocalServer) -> None:
    block = endpoint_block(kserve_server, "fmnist", endpoint={"binary": True}, input_shape=[1, 32, 32])
    with pytest.raises(AdvauditError, match=r"HTTP 400: unexpected shape \[2, 1, 32, 32\].*set target\.input_shape"):
        advaudit.load_target(block)


def test_a_server_that_does_not_read_binary_tensors_is_one_line_or_gets_json(oip_server: LocalServer) -> None:
    refusal = (r"does not read binary tensors .*: it refused them \(HTTP 500: .*\) and answered the same batch as "
               r"JSON; set target\.endpoint\.binary: false")
    with pytest.raises(AdvauditError, match=refusal) as no:
        advaudit.load_target(endpoint_block(oip_server, endpoint={"binary": True}))
    assert "\n" not in str(no.value)
    x = torch.rand(4, *FMNIST_SHAPE)
    target = advaudit.load_target(endpoint_block(oip_server))  # binary: auto
    with torch.no_grad():
        assert torch.allclose(target.predict_proba(x), torch.softmax(oip_server.net(x), 1), atol=1e-6)
    record = endpoint_records()[-1]  # MLServer is known to read JSON only: no binary request was tried
    assert record["binary"] is False and record["binary_note"] == "mlserver does not read binary tensors; sent JSON"
    assert record["requests"] == 2 + 1 and record["inputs"] == 2 + 8 + 4


def test_auto_tries_binary_once_and_keeps_to_json_where_the_server_refuses_it(oip_server: LocalServer,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "JSON_ONLY", ())  # MLServer as a server not known to read JSON only
    x = torch.rand(4, *FMNIST_SHAPE)
    target = advaudit.load_target(endpoint_block(oip_server))
    with torch.no_grad():
        assert torch.allclose(target.predict_proba(x), torch.softmax(oip_server.net(x), 1), atol=1e-6)
    record = endpoint_records()[-1]
    assert record["binary"] is False and record["binary_note"].startswith("binary tensors refused (HTTP 500")
    assert record["requests"] == 2 + 1 and record["inputs"] == 2 + 8 + 4  # the refused try is not counted
