"""The worst-case audit renders and queries in its run; its report reads the run's records and does neither."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import compose_config, worst_case_overrides


@pytest.mark.slow
def test_the_report_reads_the_runs_record_and_renders_or_queries_nothing(tiny_shapes_target: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from advaudit.audits.worst_case import budget_in_queries, prepare
    from advaudit.audits.worst_case_fresh import FRESH_FILE, read_fresh_conditions
    from advaudit.audits.worst_case_record import ExaminationRecord
    from advaudit.audits.worst_case_report import summarise_and_report
    from advaudit.core.records import to_plain
    from advaudit.tasks import examine

    cfg = compose_config("examine", worst_case_overrides(tiny_shapes_target, f"audit.judge={tiny_shapes_target}"),
                         tmp_path)
    first = examine(cfg)
    out = Path(cfg.paths.output_dir)
    record = read_fresh_conditions(out)
    n, k = len(first["per_instance"]), 5  # k = max(q=4, 5) random conditions per instance
    assert record["random_free"].shape[:2] == (n, k) and record["random_ok"].shape == (n * k,)
    assert record["gallery"].shape[0] == n and record["judge_worst"].shape == (n,)
    assert float(record["random_ok"].numpy().mean()) == first["examine/random_accuracy"]
    assert record["judge_random"].shape == (n * k,)
    assert float(record["judge_random"].float().mean()) == first["examine/judge_correct_random"]

    ex = prepare(cfg)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report rendered or queried")

    for owner, name in ((ex.world, "render"), (ex.judge, "render"), (ex.target, "predict_proba"),
                        (ex.target, "logits")):
        monkeypatch.setattr(type(owner), name, refuse)
    _, budgets = budget_in_queries(ex.audit, 4)
    again = summarise_and_report(ExaminationRecord.of(ex), first["seconds_examination"], 4, budgets)
    saved = json.loads((out / "result.json").read_text())
    shared = sorted(k for k in again if k in saved and "second" not in k)
    assert len(shared) > 40
    assert json.dumps(to_plain({k: again[k] for k in shared})) == json.dumps({k: saved[k] for k in shared})
    (out / FRESH_FILE).unlink()
    with pytest.raises(FileNotFoundError):  # without the run's record there is nothing to report
        summarise_and_report(ExaminationRecord.of(ex), first["seconds_examination"], 4, budgets)
