"""The deployed model as a target, against a real Open Inference Protocol server (MLServer, ``oip_server``).

Probabilities through the server equal the local model's; an examination through it equals the local
one record for record; a server killed mid-examination is one line and the rerun resumes; the
server's refusals are one line each naming the key that fixes them; the credential is sent and
written nowhere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import advaudit
from advaudit.errors import AdvauditError
from advaudit.models.targets.endpoint.protocol import decode_response, encode_request
from advaudit.models.targets.endpoint.serve import LocalServer
from tests.models.endpoint_fixtures import FMNIST_SHAPE, TOKEN, TOKEN_ENV, endpoint_block
from tests.models.test_imported_targets import FMNIST_NAMES
from tests.test_import_end_to_end import SMALL_FMNIST, run_examine

EXAMINATION = ["audit=worst_case", "world=transforms", "examiner=random", "examiner.q=2", "audit.selection=random",
               "audit.n_instances=2", "audit.budget=8", "audit.report_budgets=[0,8]", "audit.checkpoint_every=1",
               "audit.validity.reference=null"]


def local_block(server: LocalServer, **keys: Any) -> dict[str, Any]:
    return {"path": str(server.script), "class_names": FMNIST_NAMES, "input_shape": FMNIST_SHAPE,
            "normalization": "model", **keys}


def steps(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]


def assert_same_records(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> None:
    assert len(first) == len(second) > 0
    for a, b in zip(first, second):
        assert a.keys() == b.keys()
        for key in a:
            left, right = np.asarray(a[key], dtype=object), np.asarray(b[key], dtype=object)
            if np.asarray(a[key]).dtype.kind == "f":
                np.testing.assert_allclose(np.asarray(a[key], float), np.asarray(b[key], float), atol=1e-6, rtol=0)
            else:
                assert left.tolist() == right.tolist(), key


def test_probabilities_through_the_server_equal_the_local_models(oip_server: LocalServer) -> None:
    x = torch.rand(300, *FMNIST_SHAPE, generator=torch.Generator().manual_seed(1))
    local = advaudit.load_target(local_block(oip_server)).predict_proba(x)
    with torch.no_grad():
        assert torch.allclose(local, torch.softmax(oip_server.net(x), 1), atol=1e-6)
    for model in ("fmnist", "fmnist-onnx"):
        # max_batch 128: 300 inputs go as three requests, two at a time
        target = advaudit.load_target(endpoint_block(oip_server, model, endpoint={"max_batch": 128}))
        assert list(target.input_shape) == FMNIST_SHAPE  # read from the model's metadata
        served = target.predict_proba(x)
        assert served.shape == (300, 10) and float((served - local).abs().max()) <= 1e-6
    record = advaudit.models.targets.endpoint.endpoint_records()[-1]
    assert record["model_version"] == "7" and record["server"]["name"] == "mlserver"
    assert record["inputs"] == 2 + 8 + 300 and record["requests"] == 2 + 3  # probes, then the batch in 3 parts


def test_binary_tensors_round_trip_as_the_extension_defines_them() -> None:
    x = np.random.default_rng(0).random((3, 1, 2, 2), dtype=np.float32)
    body, headers = encode_request(x, "input", "FP32", binary=True, output="logits")
    length = int(headers["Inference-Header-Content-Length"])
    header = json.loads(body[:length])
    assert header["inputs"][0] == {"name": "input", "shape": [3, 1, 2, 2], "datatype": "FP32",
                                   "parameters": {"binary_data_size": 48}}
    assert np.array_equal(np.frombuffer(body[length:], "<f4").reshape(x.shape), x)
    scores = np.arange(6, dtype="<f4").reshape(3, 2)
    answer = json.dumps({"model_name": "m", "model_version": "2", "outputs": [
        {"name": "logits", "shape": [3, 2], "datatype": "FP32", "parameters": {"binary_data_size": 24}}]}).encode()
    got, reply = decode_response(answer + scores.tobytes(), {"Inference-Header-Content-Length": str(len(answer))}, None)
    assert np.array_equal(got, scores) and reply["model_version"] == "2"
    plain, _ = encode_request(x, "input", "FP32", binary=False)
    assert np.array_equal(np.asarray(json.loads(plain)["inputs"][0]["data"], np.float32), x.ravel())  # exact floats


def test_an_examination_through_the_server_equals_the_local_one_record_for_record(
        oip_server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    here = run_examine(tmp_path, "local", local_block(oip_server, dataset=SMALL_FMNIST), *EXAMINATION)
    block = endpoint_block(oip_server, "fmnist-secure", endpoint={"token_env": TOKEN_ENV}, dataset=SMALL_FMNIST)
    cfg_run = tmp_path / "served"
    from tests.conftest import compose_config
    from advaudit.confutil import override_value
    from advaudit.tasks import examine

    served = examine(compose_config("examine", [f"target={override_value(block)}", *EXAMINATION], cfg_run))
    assert_same_records(steps(tmp_path / "local" / "run"), steps(cfg_run / "run"))
    assert served["examine/E_T"] == pytest.approx(here["examine/E_T"], abs=1e-6)
    record = served["endpoint"]
    assert record["endpoint"] == f"{oip_server.url}/v2/models/fmnist-secure" and record["model_version"] == "1"
    assert record["inputs"] >= 2 * 8 and record["seconds_waiting"] > 0
    saved = json.loads((cfg_run / "run" / "result.json").read_text())
    assert saved["endpoint"]["requests"] == record["requests"] and saved["target"].endswith("/fmnist-secure")
    report = (cfg_run / "run" / "report.md").read_text()  # the report says where, which version, how long
    assert f"- endpoint: {oip_server.url}/v2/models/fmnist-secure, model version 1 (mlserver 1.7.1): " in report
    shares = (100 * saved["examine/invalid_share"], 100 * saved["examine/final_invalid_share"])
    assert (f"invalid are {shares[0]:.1f}% of all\n  proposals (8 per instance" in report
            and f"{shares[1]:.1f}% of the last iteration's proposals (where the examiner ended up)" in report)
    # the credential went to the server (fmnist-secure refuses requests without it) and is written nowhere
    files = [p for p in cfg_run.rglob("*") if p.is_file()]
    assert any("wandb" in p.parts for p in files)  # the offline W&B run is among the files searched
    assert [str(p) for p in files if TOKEN.encode() in p.read_bytes()] == []
    with pytest.raises(AdvauditError, match=r"HTTP 401: missing or wrong bearer token\); give the server's "
                                            r"credentials in an environment variable named by target\.endpoint\.token_env") as refused:
        advaudit.load_target(endpoint_block(oip_server, "fmnist-secure"))
    assert "\n" not in str(refused.value) and TOKEN not in str(refused.value)


@pytest.mark.parametrize("model,endpoint,keys,fix", [
    ("fmnist-quiet", {"input_name": "image"}, {"input_shape": FMNIST_SHAPE},
     r"HTTP 400: unexpected inference input.*set target\.endpoint\.input_name to the model's input name"),
    ("fmnist", {}, {"input_shape": [1, 32, 32]},
     r"HTTP 400: unexpected shape \[2, 1, 32, 32\].*set target\.input_shape to the shape the model takes"),
    ("fmnist-broken", {}, {}, r"HTTP 500: Internal Server Error\) on 2 tries; the model fails on the server: read "
                              r"the server's log"),
    ("fmnist", {"input_name": "image"}, {}, r"input_name='image' is not an input of .*its inputs: \['input'\]"),
    ("fmnist-quiet", {}, {}, r"lists 0 inputs \[\]; name the one that takes the image or row with "
                             r"target\.endpoint\.input_name"),
    ("no-such-model", {}, {}, r"HTTP 404.*check target\.endpoint\.model"),
])
def test_the_servers_refusals_are_one_line_each_naming_the_fix(oip_server: LocalServer, model: str,
                                                               endpoint: dict, keys: dict, fix: str) -> None:
    with pytest.raises(AdvauditError, match=fix) as refused:
        advaudit.load_target(endpoint_block(oip_server, model, endpoint=endpoint, **keys))
    assert "\n" not in str(refused.value)


def test_block_mistakes_are_refused_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    cases = {"url": (({"url": "localhost:8080"}), r"endpoint\.url='localhost:8080'; give the server's address"),
             "key": ({"retires": 2}, r"target\.endpoint\.retires is not an endpoint setting; did you mean "
                                     r"target\.endpoint\.retries\?"),
             "env": ({"token_env": "NO_SUCH_TOKEN"}, r"\$NO_SUCH_TOKEN is not set; export it"),
             "secret": ({"token_env": "Bearer abc"}, r"names an environment variable .* never write the secret"),
             "batch": ({"max_batch": 0}, r"max_batch=0; give a whole number >= 1")}
    for endpoint, fix in cases.values():
        block = {"endpoint": {"url": "http://127.0.0.1:9", "model": "m", **endpoint}, "class_names": ["a", "b"],
                 "normalization": "model"}
        with pytest.raises(AdvauditError, match=fix):
            advaudit.load_target(block)
    block = {"endpoint": {"url": "http://127.0.0.1:9", "model": "m", "retries": 1, "backoff": 0.01},
             "class_names": ["a", "b"], "normalization": "model"}
    with pytest.raises(AdvauditError, match=r"stopped answering \(connection refused\) after 2 tries.*start the "
                                            r"server again \(or fix target\.endpoint\.url\)"):
        advaudit.load_target(block)


def test_a_server_killed_mid_examination_is_one_line_and_the_rerun_resumes_where_it_stopped(
        oip_server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    import advaudit.audits.worst_case as worst_case
    from advaudit.confutil import override_value
    from tests.cli_batch import run_case

    block = endpoint_block(oip_server, dataset=SMALL_FMNIST)
    args = [f"target={override_value(block)}", *EXAMINATION, "logger=none", "threads=1",
            f"hydra.run.dir={tmp_path / 'served'}", f"paths.root_dir={tmp_path}"]
    append_jsonl, written = worst_case.append_jsonl, []

    def append_then_kill(path: Path, records: list[dict]) -> None:
        append_jsonl(path, records)
        if Path(path).name == "steps.jsonl":
            written.append(len(records))
            if len(written) == 2:
                oip_server.kill()  # SIGKILL: the deployment dies between two steps of the examination

    monkeypatch.setenv("ADVAUDIT_PROGRESS", "0")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        monkeypatch.setattr(worst_case, "append_jsonl", append_then_kill)
        stopped = run_case("examine.py", args)
        before = steps(tmp_path / "served")
        monkeypatch.setattr(worst_case, "append_jsonl", append_jsonl)
        oip_server.start()  # the deployment is back, at the same address
        rerun = run_case("examine.py", args)
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        if oip_server.process is None or oip_server.process.poll() is not None:
            oip_server.start()
    lines = stopped["stderr"].strip().splitlines()
    assert stopped["code"] == 2 and "Traceback" not in stopped["stderr"], stopped["stderr"][-3000:]
    assert lines[-1].startswith(f"error: the endpoint {oip_server.url}/v2/models/fmnist stopped answering "
                                "(connection refused) after 2 tries") and "rerun the same command" in lines[-1]
    assert [r["step"] for r in before] == [0, 0, 1, 1]
    assert rerun["code"] == 0, rerun["stderr"][-3000:]
    after = steps(tmp_path / "served")  # every step once; the two written before the kill kept as they were
    assert after[:4] == before and [r["step"] for r in after] == [0, 0, 1, 1, 2, 2, 3, 3]
    resumed = json.loads((tmp_path / "served" / "result.json").read_text())["endpoint"]
    assert resumed["inputs"] < 10 + 2 * 8 + 300  # only the steps left (and the report's renders) went out again


def test_the_docs_block_works_as_written(oip_server: LocalServer) -> None:
    import yaml

    page = (Path(__file__).resolve().parents[2] / "docs" / "deployed-model.md").read_text()
    block = yaml.safe_load(page.split("```yaml\n")[1].split("```")[0])["target"]
    assert block["endpoint"] == {"url": "http://localhost:8080", "model": "fmnist"}
    block["endpoint"]["url"] = oip_server.url  # the page's server listens on 8080, the test's on a free port
    target = advaudit.load_target(block)
    x = torch.rand(4, *FMNIST_SHAPE)
    with torch.no_grad():
        assert torch.allclose(target.predict_proba(x), torch.softmax(oip_server.net(x), 1), atol=1e-6)


def test_a_merged_examination_of_a_served_target_names_the_endpoint_as_one_job_does(
        oip_server: LocalServer, tmp_path: Path) -> None:
    from advaudit.audits.merging import merge_shards
    from advaudit.confutil import override_value
    from advaudit.tasks import examine
    from tests.conftest import compose_config

    overrides = [f"target={override_value(endpoint_block(oip_server, dataset=SMALL_FMNIST))}", "logger=none",
                 *EXAMINATION]
    examine(compose_config("examine", overrides, tmp_path / "one"))
    shards = [examine(compose_config("examine", [*overrides, "audit.shards=2", f"audit.shard={k}"], tmp_path / f"{k}"))
              for k in (0, 1)]
    merged = merge_shards([tmp_path / f"{k}" / "run" for k in (0, 1)], tmp_path / "merged")

    def endpoint_line(run: Path) -> str:
        return next(line for line in (run / "report.md").read_text().splitlines() if line.startswith("- endpoint: "))

    one, joined = endpoint_line(tmp_path / "one" / "run"), endpoint_line(tmp_path / "merged")
    head = f"- endpoint: {oip_server.url}/v2/models/fmnist, model version "
    assert one.startswith(head) and joined.startswith(head)
    said = [re.match(r"(.*, model version .*): \d+ inputs in \d+ requests", line) for line in (one, joined)]
    assert said[0] and said[1] and said[0].group(1) == said[1].group(1)   # the same server, model and version
    requests = sum(s["endpoint"]["requests"] for s in shards)     # what the two jobs sent, summed
    assert merged["endpoint"]["requests"] == requests and merged["endpoint"]["jobs"] == 2
    assert f"in {requests} requests by its 2 shards so far" in joined
