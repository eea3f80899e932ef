"""An examination step renders and scores at most ``audit.chunk`` queries at a time, with the same result."""

from __future__ import annotations

from pathlib import Path

import pytest

import advaudit.audits.worst_case as worst_case
from advaudit.core.records import read_jsonl
from advaudit.tasks import examine
from advaudit.worlds.validity import ValidityJudge
from tests.audits.test_lazy_judge_and_shards import _numbers
from tests.conftest import worst_case_overrides


def test_the_chunks_cover_every_query_once_in_order() -> None:
    pieces = worst_case._chunks(3, 4, 5)
    assert [len(rows) for rows, _ in pieces] == [5, 5, 2]
    pairs = [(int(r), int(c)) for rows, cols in pieces for r, c in zip(rows, cols)]
    assert pairs == [(r, c) for r in range(3) for c in range(4)]
    assert len(worst_case._chunks(3, 4, 12)) == 1


@pytest.mark.slow
@pytest.mark.parametrize("lazy", [True, False])
def test_a_small_chunk_bounds_every_batch_and_gives_the_same_examination(
        make_cfg, tiny_shapes_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lazy: bool) -> None:
    # 12 instances x q = 8: 96 queries a step, in chunks of 7 (not a divisor of q: chunks cut across instances)
    overrides = worst_case_overrides(tiny_shapes_target, "examiner.q=8", "audit.budget=16", "audit.n_instances=12",
                                     "audit.report_budgets=[0,16]", "audit.validity.share_sample=0.25",
                                     f"audit.validity.lazy={str(lazy).lower()}")
    whole = examine(make_cfg("examine", [*overrides, f"paths.output_dir={tmp_path / 'whole'}"]))
    batches: list[int] = []
    render, step = ValidityJudge.render_geometric, worst_case.examine_step
    in_step = []

    def counted(self: ValidityJudge, z, s):  # noqa: ANN001, ANN202
        if in_step:  # the examination's steps (the report renders apart)
            batches.append(s.shape[0] * s.shape[1])
        return render(self, z, s)

    def stepping(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        in_step.append(True)
        try:
            return step(*args, **kwargs)
        finally:
            in_step.pop()

    monkeypatch.setattr(ValidityJudge, "render_geometric", counted)
    monkeypatch.setattr(worst_case, "examine_step", stepping)
    chunked = examine(make_cfg("examine", [*overrides, "audit.chunk=7", f"paths.output_dir={tmp_path / 'chunked'}"]))
    monkeypatch.undo()
    assert batches and max(batches) <= 7 and sum(batches) >= 12 * 16  # every query rendered, none more than 7 at once
    # the network's float rounding depends on its batch (~1e-9 here); every decision is the same
    numbers = _numbers(whole)
    assert _close(_numbers(chunked), numbers)
    steps = [read_jsonl(tmp_path / name / "steps.jsonl") for name in ("whole", "chunked")]
    for a, b in zip(*steps, strict=True):
        assert a["true_prob"] == pytest.approx(b["true_prob"], abs=1e-6)
        assert {k: v for k, v in a.items() if k != "true_prob"} == {k: v for k, v in b.items() if k != "true_prob"}


def _close(a: object, b: object) -> bool:
    """Equal, floats within 1e-6, through dicts and lists."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, abs=1e-6, nan_ok=True)
    return a == b
