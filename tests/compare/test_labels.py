"""Checkpoints that share a name are still compared, and runs that differ only in how they were executed are
compared together."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from advaudit.compare.design import group_runs
from advaudit.compare.labels import distinguishing_parts
from advaudit.compare.records import discover_runs
from tests.compare.fixtures import write_worst_case


def _named_block_run(run_dir: Path, name: str, weights: str, worst: float, **audit: object) -> None:
    """A worst-case run whose target is a block ``{name, path}``, as an imported checkpoint's run records it."""
    path = write_worst_case(run_dir, name, 0, np.full(12, worst), np.ones(12, bool), **audit)
    result = json.loads(path.read_text())
    result["config"]["target"] = {"name": name, "path": weights, "model": {"_target_": "user.Net"}}
    path.write_text(json.dumps(result))


def test_two_checkpoints_named_alike_are_two_checkpoints_with_a_note(tmp_path: Path) -> None:
    _named_block_run(tmp_path / "a", "plain", "/ckpt/plain_s0/weights.pt", 0.2)
    _named_block_run(tmp_path / "b", "plain", "/ckpt/plain_s1/weights.pt", 0.4)
    [group] = group_runs(discover_runs([tmp_path]))
    assert group.targets == ["plain (plain_s0)", "plain (plain_s1)"]
    assert any("2 different checkpoints are all named 'plain'" in note for note in group.notes)
    assert not any("was run 2 times" in note for note in group.notes)


def test_one_checkpoint_run_twice_keeps_its_name(tmp_path: Path) -> None:
    _named_block_run(tmp_path / "a", "plain", "/ckpt/plain_s0/weights.pt", 0.2)
    _named_block_run(tmp_path / "b", "plain", "/ckpt/plain_s0/weights.pt", 0.2)
    [group] = group_runs(discover_runs([tmp_path]))
    assert group.targets == ["plain"]
    assert any("was run 2 times" in note for note in group.notes)


def test_sharding_and_lazy_judging_do_not_split_a_comparison(tmp_path: Path) -> None:
    judge = {"reference": "world", "reference_min_prob": 0.99}
    _named_block_run(tmp_path / "old", "plain", "/ckpt/plain.pt", 0.2, validity=judge)
    _named_block_run(tmp_path / "new", "rot", "/ckpt/rot.pt", 0.3, shard=0, shards=1,
                     validity={**judge, "lazy": True, "share_sample": 0.03125})
    [group] = group_runs(discover_runs([tmp_path]))
    assert group.targets == ["plain", "rot"]


def test_distinguishing_parts_drop_what_all_paths_share() -> None:
    assert distinguishing_parts(["/a/plain_s0/weights.pt", "/a/plain_s1/weights.pt"]) == ["plain_s0", "plain_s1"]
    assert distinguishing_parts(["/a/x.pt", "/a/y.pt"]) == ["x.pt", "y.pt"]
    assert distinguishing_parts(["/a/b/x.pt", "/c/x.pt"]) == ["a/b", "c"]


def test_one_file_per_seed_under_one_name_is_a_recipe_over_seeds(tmp_path: Path) -> None:
    for seed in (0, 1):
        for recipe, worst in (("plain", 0.2), ("rot", 0.4)):
            path = write_worst_case(tmp_path / f"{recipe}{seed}", recipe, seed, np.full(12, worst), np.ones(12, bool))
            result = json.loads(path.read_text())
            result["config"]["target"] = {"name": recipe, "path": f"/ckpt/{recipe}_s{seed}/weights.pt"}
            path.write_text(json.dumps(result))
    [group] = group_runs(discover_runs([tmp_path]))
    assert group.targets == ["plain", "rot"] and group.common_seeds() == [0, 1]
    assert any("'plain' is 2 checkpoint files, one per seed" in note for note in group.notes)


def test_a_value_written_literally_and_one_computed_by_an_interpolation_do_not_split(tmp_path: Path) -> None:
    from advaudit.compare.design import comparable_config
    written = {"audit": {"report_budgets": "${report_budgets_within:${.budget}}", "seed": "${seed}"}}
    resolved = {"audit": {"report_budgets": [0, 100], "seed": 3}}
    assert comparable_config(written, resolved) == {"audit": {"report_budgets": [0, 100], "seed": "${seed}"}}
