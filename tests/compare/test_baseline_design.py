"""Many checkpoints of one sweep: every other checkpoint against a baseline (K - 1 pairs), all pairs on request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advaudit.compare import compare_runs
from advaudit.compare.__main__ import main
from tests.compare.fixtures import write_worst_case


def _sweep(root: Path, k: int) -> None:
    rng = np.random.default_rng(0)
    for i in range(k):
        worst = np.clip(rng.normal(0.5 - 0.05 * i, 0.05, 30), 0, 1)
        write_worst_case(root / f"epoch_{i:02d}", f"/ckpt/epoch_{i:02d}", 0, worst, worst < 0.3)


def _pairs(group: dict) -> set[tuple[str, str]]:
    """The pairs compared on the primary metric, each checkpoint by its last path part (``epoch_03``)."""
    def last(target: str) -> str:
        return group["targets"][target].split("/")[-1]
    return {(last(r["a"]), last(r["b"])) for r in group["pairs"] if r["metric"] == group["primary"]}


def test_five_checkpoints_are_each_compared_with_the_first_by_default_and_all_pairs_on_request(tmp_path: Path) -> None:
    _sweep(tmp_path / "runs", 5)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out", replay=False)["groups"]
    assert _pairs(group) == {("epoch_00", f"epoch_{i:02d}") for i in range(1, 5)}
    assert any("each is compared with" in n and "epoch_00 (the first by name" in n for n in group["notes"])
    tests = len(group["pairs"])
    [every] = compare_runs([tmp_path / "runs"], tmp_path / "all", replay=False, all_pairs=True)["groups"]
    assert len(_pairs(every)) == 10 and len(every["pairs"]) == tests * 10 // 4   # the Holm family grows with it
    [chosen] = compare_runs([tmp_path / "runs"], tmp_path / "b", replay=False, baseline="/ckpt/epoch_03")["groups"]
    assert _pairs(chosen) == {("epoch_03", f"epoch_{i:02d}") for i in (0, 1, 2, 4)}


def test_three_checkpoints_keep_every_pair_and_an_unknown_baseline_is_refused_before_comparing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _sweep(tmp_path / "runs", 3)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out", replay=False)["groups"]
    assert len(_pairs(group)) == 3
    assert main([str(tmp_path / "runs"), "--out", str(tmp_path / "x"), "--baseline", "epoch_9", "--no-replay"]) == 2
    assert "--baseline epoch_9: no checkpoint to compare has that name" in capsys.readouterr().err
    assert not (tmp_path / "x" / "comparison.json").exists()
