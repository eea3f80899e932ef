"""Checkpoint files that share a name are one recipe compared over its files, and runs that differ only in how they
were executed are compared together."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ttest_ind

from advaudit.compare.design import group_runs
from advaudit.compare.differences import recipe_difference
from advaudit.compare.labels import distinguishing_parts, parse_recipes
from advaudit.compare.metrics import Metric
from advaudit.compare.records import discover_runs
from advaudit.compare.where.replay import target_value
from advaudit.errors import AdvauditError
from tests.compare.fixtures import write_worst_case


def _named_block_run(run_dir: Path, name: str, weights: str, worst: float, **audit: object) -> None:
    """A worst-case run whose target is a block ``{name, path}``, as an imported checkpoint's run records it."""
    path = write_worst_case(run_dir, name, 0, np.full(12, worst), np.ones(12, bool), **audit)
    result = json.loads(path.read_text())
    result["config"]["target"] = {"name": name, "path": weights, "model": {"_target_": "user.Net"}}
    path.write_text(json.dumps(result))


def test_two_checkpoint_files_named_alike_are_one_recipe_of_two_files_with_a_note(tmp_path: Path) -> None:
    _named_block_run(tmp_path / "a", "plain", "/ckpt/plain_s0/weights.pt", 0.2)
    _named_block_run(tmp_path / "b", "plain", "/ckpt/plain_s1/weights.pt", 0.4)
    [group] = group_runs(discover_runs([tmp_path]))
    assert group.targets == ["plain"] and group.is_recipe("plain")
    assert group.files("plain") == ["/ckpt/plain_s0/weights.pt", "/ckpt/plain_s1/weights.pt"]
    assert len(group.runs_at("plain", 0)) == 2
    assert any("'plain' is 2 checkpoint files (plain_s0, plain_s1): compared as one recipe" in note
               for note in group.notes)
    assert not any("was run 2 times" in note for note in group.notes)


def test_recipes_trained_with_different_seeds_and_examined_at_one_seed_compare_over_their_files(
        tmp_path: Path) -> None:
    """Item 6 of the issue: plain trained with seeds 0-2, rot with 3-5, every file examined at seed 0."""
    for recipe, seeds, worst in (("plain", (0, 1, 2), 0.2), ("rot", (3, 4, 5), 0.4)):
        for train_seed in seeds:
            _named_block_run(tmp_path / f"{recipe}{train_seed}", recipe, f"/ckpt/{recipe}_s{train_seed}/weights.pt",
                             worst + 0.01 * train_seed)
    [group] = group_runs(discover_runs([tmp_path]))
    assert group.targets == ["plain", "rot"] and [len(group.files(t)) for t in group.targets] == [3, 3]
    metric = Metric("examine/worst", True, "worst")
    row = recipe_difference(group, "plain", "rot", metric)
    plain, rot = [0.2 + 0.01 * s for s in (0, 1, 2)], [0.4 + 0.01 * s for s in (3, 4, 5)]
    assert row["diff"] == pytest.approx(np.mean(plain) - np.mean(rot)) and row["units"] == "files"
    expected = ttest_ind(plain, rot, equal_var=False)
    assert row["p"] == pytest.approx(expected.pvalue) and row["lo"] == pytest.approx(expected.confidence_interval().low)
    assert row["interval_over"] == "files (training seeds): 3 and 3"


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
    assert any("'plain' is 2 checkpoint files (plain_s0, plain_s1): compared as one recipe" in note
               for note in group.notes)


def test_a_value_written_literally_and_one_computed_by_an_interpolation_do_not_split(tmp_path: Path) -> None:
    from advaudit.compare.design import comparable_config
    written = {"audit": {"report_budgets": "${report_budgets_within:${.budget}}", "seed": "${seed}"}}
    resolved = {"audit": {"report_budgets": [0, 100], "seed": 3}}
    assert comparable_config(written, resolved) == {"audit": {"report_budgets": [0, 100], "seed": "${seed}"}}


def _unnamed_recipe_runs(root: Path) -> None:
    """Two recipes over seeds 0 and 1 whose target blocks carry no name: each file is its own checkpoint."""
    for seed in (0, 1):
        for recipe, worst in (("control", 0.2), ("narrowed", 0.4)):
            path = write_worst_case(root / f"s{seed}" / recipe, recipe, seed, np.full(12, worst), np.ones(12, bool))
            result = json.loads(path.read_text())
            result["config"]["target"] = f"/runs/s{seed}/{recipe}/checkpoints/target.pt"
            result.pop("target", None)
            path.write_text(json.dumps(result))


def test_unnamed_runs_one_per_seed_are_refused_with_the_fix(tmp_path: Path) -> None:
    _unnamed_recipe_runs(tmp_path)
    with pytest.raises(AdvauditError, match=r"no seed in common .*--recipe NAME=PATTERN"):
        group_runs(discover_runs([tmp_path]))


def test_recipe_patterns_make_unnamed_runs_recipes_over_seeds(tmp_path: Path) -> None:
    _unnamed_recipe_runs(tmp_path)
    recipes = parse_recipes(["control=*/control/*", "narrowed=*/narrowed/*"])
    [group] = group_runs(discover_runs([tmp_path], recipes))
    assert group.targets == ["control", "narrowed"] and group.common_seeds() == [0, 1]
    assert any("'control' is 2 checkpoint files (s0, s1): compared as one recipe" in note for note in group.notes)
    assert target_value(group, "control", 1) == "/runs/s1/control/checkpoints/target.pt"  # each seed's own file


@pytest.mark.parametrize("specs, message", [
    (["control"], "is not NAME=PATTERN"),
    (["control=*/contrl/*"], "matches no run's checkpoint path"),
    (["a=*/s0/*", "b=*/control/*"], "matches the patterns of --recipe a and b"),
])
def test_bad_recipe_patterns_say_what_is_wrong(tmp_path: Path, specs: list[str], message: str) -> None:
    _unnamed_recipe_runs(tmp_path)
    with pytest.raises(AdvauditError, match=message):
        discover_runs([tmp_path], parse_recipes(specs))
