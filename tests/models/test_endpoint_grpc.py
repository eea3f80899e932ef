"""The endpoint target over the Open Inference Protocol's gRPC service (``protocol: grpc``), against real servers.

KServe (``kserve_server``) and MLServer (``oip_server``) serve the same model on a gRPC port beside REST: the
target reads the metadata there, sends raw tensor bytes and scores as the local model does; refusals
and a server that is not there read as one line, as on REST.
"""

from __future__ import annotations

import pytest
import torch

import advaudit
from advaudit.errors import AdvauditError
from advaudit.models.targets.endpoint import CLIENTS, endpoint_records
from advaudit.models.targets.endpoint.grpc_protocol import GrpcChannel, varint
from advaudit.models.targets.endpoint.serve import LocalServer
from advaudit.models.targets.endpoint.settings import parse_endpoint
from tests.models.endpoint_fixtures import FMNIST_SHAPE, TOKEN, TOKEN_ENV, endpoint_block
from tests.models.test_endpoint import local_block


def grpc_block(server: LocalServer, model: str = "fmnist", **endpoint: object) -> dict:
    """A target block reaching ``model`` on ``server``'s gRPC port."""
    return endpoint_block(server, model, endpoint={"url": f"http://127.0.0.1:{server.grpc_port}", "protocol": "grpc",
                                                  **endpoint})


@pytest.mark.parametrize("fixture", ["kserve_server", "oip_server"])
def test_grpc_scores_as_the_local_model_and_sends_raw_bytes(fixture: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(fixture)
    x = torch.rand(300, *FMNIST_SHAPE, generator=torch.Generator().manual_seed(4))
    local = advaudit.load_target(local_block(server)).predict_proba(x)
    served = advaudit.load_target(grpc_block(server, max_batch=128)).predict_proba(x)
    assert served.shape == (300, 10) and float((served - local).abs().max()) <= 1e-6
    record = endpoint_records()[-1]
    assert record["settings"]["protocol"] == "grpc" and record["inputs"] == 2 + 8 + 300 and record["requests"] == 5
    assert record["server"]["name"] in ("kserve", "mlserver") and record["model_version"] == "1"
    assert 310 * 28 * 28 * 4 < record["bytes_sent"] < 310 * 28 * 28 * 4 + 5 * 100  # raw float32, a short header each
    assert record["server_seconds"] > 0  # the runtimes' inference time, a string parameter over gRPC


@pytest.mark.parametrize("fixture", ["kserve_server", "oip_server"])
def test_grpc_sends_the_bearer_token_and_a_missing_one_is_refused_at_once(fixture: str,
                                                                          request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(fixture)
    x = torch.rand(40, *FMNIST_SHAPE, generator=torch.Generator().manual_seed(5))
    local = advaudit.load_target(local_block(server)).predict_proba(x)
    served = advaudit.load_target(grpc_block(server, "fmnist-secure", token_env=TOKEN_ENV)).predict_proba(x)
    assert float((served - local).abs().max()) <= 1e-6  # the token went as call metadata: the server answered
    with pytest.raises(AdvauditError, match=r"HTTP 401: UNAUTHENTICATED: missing or wrong bearer token\); give the "
                                            r"server's credentials in an environment variable named by "
                                            r"target\.endpoint\.token_env") as refused:
        advaudit.load_target(grpc_block(server, "fmnist-secure"))
    assert "\n" not in str(refused.value) and TOKEN not in str(refused.value)
    assert CLIENTS[-1].stats["retries"] == 0  # a refusal, not a failing model: not retried


def test_grpc_refusals_and_a_missing_server_are_one_line(kserve_server: LocalServer) -> None:
    cases = [(grpc_block(kserve_server, "no-such-model"), r"HTTP 404: NOT_FOUND: .*check target\.endpoint\.model"),
             ({**grpc_block(kserve_server), "input_shape": [1, 32, 32]},
              r"HTTP 400: INVALID_ARGUMENT: unexpected shape \[2, 1, 32, 32\].*set target\.input_shape"),
             (grpc_block(kserve_server, input_name="pixels"), r"input_name='pixels' is not an input .*its inputs: "
                                                              r"\['input'\]"),
             (endpoint_block(kserve_server, endpoint={"url": "http://127.0.0.1:9", "protocol": "grpc"}),
              r"stopped answering \(connection refused\) after 2 tries")]
    for block, message in cases:
        with pytest.raises(AdvauditError, match=message) as refused:
            advaudit.load_target(block)
        assert "\n" not in str(refused.value)


def test_grpc_settings_refuse_what_does_not_apply() -> None:
    with pytest.raises(AdvauditError, match=r"protocol='http2'; use rest or grpc"):
        parse_endpoint({"url": "http://h:8081", "model": "m", "protocol": "http2"})
    with pytest.raises(AdvauditError, match=r"binary=false is for REST: over gRPC tensors go as raw bytes"):
        parse_endpoint({"url": "http://h:8081", "model": "m", "protocol": "grpc", "binary": False})
    channel = GrpcChannel(parse_endpoint({"url": "http://h:8081", "model": "m", "protocol": "grpc"}), {})
    x = torch.rand(3, *FMNIST_SHAPE).numpy()
    body = channel.infer_request(x, "input", "FP32", "logits")
    request = channel.messages["ModelInferRequest"].FromString(body)  # the protocol's own message, field by field
    assert request.model_name == "m" and list(request.inputs[0].shape) == [3, *FMNIST_SHAPE]
    assert request.raw_input_contents[0] == x.tobytes() and request.outputs[0].name == "logits"
    assert body == request.SerializeToString()  # the raw bytes appended as field 7 are protobuf's own serialization
    assert varint(300) == b"\xac\x02" and varint(0) == b"\x00" and varint(127) == b"\x7f"  # protobuf's own examples
    channel.close()
