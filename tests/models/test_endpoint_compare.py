"""A checkpoint compared with its deployed self (docs/deployed-model.md), and the comparison's W&B lineage:
the audited checkpoint and endpoint and the audit runs as inputs, the report as the output artifact, the
gate's alias on the candidate that passed; inside an active W&B run, logged into that run."""

from __future__ import annotations

from pathlib import Path

import pytest

from advaudit.compare.__main__ import main as compare_main
from advaudit.confutil import override_value
from advaudit.models.targets.endpoint.serve import LocalServer
from advaudit.report.wandb_offline import offline_runs
from advaudit.tasks import examine
from tests.conftest import compose_config
from tests.models.endpoint_fixtures import endpoint_block
from tests.models.test_endpoint import local_block
from tests.test_import_end_to_end import SMALL_FMNIST


def test_a_checkpoint_and_its_deployed_self_score_identically_and_the_comparison_keeps_its_lineage(
        oip_server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import wandb

    runs = tmp_path / "runs"
    checkpoint = local_block(oip_server, dataset=SMALL_FMNIST)
    for name, block in (("checkpoint", checkpoint), ("deployed", endpoint_block(oip_server, dataset=SMALL_FMNIST))):
        examine(compose_config("examine", [f"target={override_value(block)}", "audit=evaluate", "logger=none"],
                               runs / name))
    monkeypatch.setenv("WANDB_MODE", "offline")
    out = tmp_path / "comparison"
    (out).mkdir()
    (out / "gate.xml").write_text("<testsuite name='stale, passed'/>")
    code = compare_main([str(runs), "--out", str(out), "--no-replay", "--gate", checkpoint["path"], "--wandb",
                         "--gate-alias", "deploy-ok"])
    printed = capsys.readouterr().out
    assert code == 0 and "score identically" in printed and "gate passed" in printed
    assert "stale" not in (out / "gate.xml").read_text()
    [run] = offline_runs(out)
    assert run["job_type"] == "compare" and run["finished"]
    inputs = [a for a in run["artifacts"] if a["input"]]
    assert sorted(a["type"] for a in inputs) == ["audit", "audit", "model", "model"]
    [file_model] = [a for a in inputs if a["files"] == ["net.pt"]]
    [served] = [a for a in inputs if a["files"] == ["endpoint.json"]]
    assert served["metadata"]["endpoint"] == f"{oip_server.url}/v2/models/fmnist"
    assert served["metadata"]["model_version"] == "1" and "deploy-ok" in served["aliases"]  # the gate passed it
    assert "deploy-ok" not in file_model["aliases"]  # the baseline is not a candidate
    assert all(a["files"] == ["result.json"] for a in inputs if a["type"] == "audit")
    [report] = [a for a in run["artifacts"] if a["type"] == "comparison"]
    assert report["type"] == "comparison" and {"comparison.html", "comparison.json", "gate.xml"} <= set(report["files"])

    # an unknown baseline is refused before the comparison runs (nothing written), and from Python inside an
    # active W&B run the comparison logs into that run
    assert compare_main([str(runs), "--out", str(tmp_path / "never"), "--gate", "no-such"]) == 2
    assert "--gate no-such: no checkpoint to compare has that name" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
    active = wandb.init(project="advaudit-test", mode="offline", dir=str(tmp_path / "active"), job_type="pipeline")
    try:
        assert compare_main([str(runs), "--out", str(tmp_path / "inside"), "--no-replay", "--wandb"]) == 0
        assert wandb.run is active  # still open: the caller's run
    finally:
        active.finish()
    assert offline_runs(tmp_path / "inside") == []
    [pipeline] = offline_runs(tmp_path / "active")
    assert pipeline["job_type"] == "pipeline"
    assert {"model", "audit", "comparison"} <= {a["type"] for a in pipeline["artifacts"]}
