"""Recipes of several checkpoint files (training seeds) under one name each: the where section scores every file on
the same held-out renders, tests each cell over the recipes' files and says a cell only when every pair of files
agrees; the strongest said cell is confirmed on other held-out instances."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from advaudit.compare import compare_runs
from advaudit.compare.design import group_runs
from advaudit.compare.records import discover_runs
from advaudit.compare.where.confirm import Settings
from advaudit.compare.where.replay import target_value
from tests.compare import test_where_known_answers as plane
from tests.compare.fixtures import write_worst_case

MODULE = __name__


def predict_weak_t_seed1(x: Tensor) -> Tensor:
    """Seed 1 of the weak recipe: the same weakness in another file, from t >= 0.75."""
    t = x.reshape(len(x), 3)[:, 0]
    return plane._probs(x, torch.where(t >= 0.75, 0.25, 0.9))


def predict_strong_seed1(x: Tensor) -> Tensor:
    """Seed 1 of the strong recipe: wrong on a sliver of t the other file gets right."""
    t = x.reshape(len(x), 3)[:, 0]
    return plane._probs(x, torch.where((t > 0.3) & (t < 0.33), 0.2, 0.9))


def predict_strong_seed2(x: Tensor) -> Tensor:
    """Seed 2 of the strong recipe: wrong on another sliver of t."""
    t = x.reshape(len(x), 3)[:, 0]
    return plane._probs(x, torch.where((t > 0.6) & (t < 0.63), 0.2, 0.9))


def predict_weak_t_from_086(x: Tensor) -> Tensor:
    """A third weak file: the weakness from t >= 0.86 (70% of the top fifth)."""
    t = x.reshape(len(x), 3)[:, 0]
    return plane._probs(x, torch.where(t >= 0.86, 0.2, 0.9))


def predict_weak_t_from_09(x: Tensor) -> Tensor:
    """A fourth: from t >= 0.9, half of the top fifth."""
    t = x.reshape(len(x), 3)[:, 0]
    return plane._probs(x, torch.where(t >= 0.9, 0.2, 0.9))


def _block(name: str, function: str) -> dict[str, object]:
    return {"function": function, "class_names": ["a", "b"], "input_shape": [1, 1, 3], "normalization": "model",
            "name": name}


def _write(run_dir: Path, name: str, function: str, seed: int, planted: bool, rng: np.random.Generator) -> None:
    values = plane._values(rng, 40, planted)
    worst_s = [{"t": float(t), "angle": float(a)} for t, a in zip(values["t"], values["angle"])]
    worst = np.full(40, 0.2 if planted else 0.9)
    path = write_worst_case(run_dir, name, seed, worst, worst < 0.5, worst_s=worst_s, instances=list(range(40)))
    result = json.loads(path.read_text())
    result["config"].update(target=_block(name, function), world=plane.WORLD)
    for row in result["per_instance"]:
        row.update(label=row["instance"] % 2, **{"class": plane.PlaneWorld.class_names[row["instance"] % 2]})
    path.write_text(json.dumps(result))


def _recipes(root: Path, weak_in_seed1: bool) -> None:
    rng = np.random.default_rng(3)
    _write(root / "w0", "cand", f"{plane.MODULE}.predict_weak_t", 0, True, rng)
    _write(root / "w1", "cand", f"{MODULE}.predict_{'weak_t' if weak_in_seed1 else 'strong'}_seed1", 1,
           weak_in_seed1, rng)
    _write(root / "s0", "base", f"{plane.MODULE}.predict_strong", 0, False, rng)
    _write(root / "s1", "base", f"{MODULE}.predict_strong_seed1", 1, False, rng)


def test_a_weakness_in_every_file_is_said_about_the_recipe_and_confirmed_on_other_instances(tmp_path: Path) -> None:
    _recipes(tmp_path / "runs", weak_in_seed1=True)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out", where=Settings(instances=20))["groups"]
    assert sorted(group["targets"]) == ["base", "cand"]
    assert any("'cand' is 2 checkpoint files" in note and "compared as one recipe" in note for note in group["notes"])
    where = group["where"]
    said = [r for r in where["sensitivity"]["pairs"] if r["said"]]
    assert said and {(r["factor"], r["kind"], r["fifth"]) for r in said} == {("t", "fifth", 4)}
    assert all(r["design"] == "recipes" and r["agree"] == r["pairs"] == 4 for r in said)
    [check] = where["recipe_checks"]                       # confirmed on instances its sensitivity did not see
    assert (check["factor"], check["region"], check["weaker"]) == ("t", [0.8, 1.0], "cand")
    assert check["test"] == "Welch t over files" and check["agree"] == 4
    assert not set(check["instances"]) & set(where["sensitivity"]["instances"])
    assert any(s.startswith("Over their files (2 and 2), at t 0.8-1 cand is the less accurate")
               for s in where["sentences"])
    assert any(s.startswith("Over the recipes' files: Checked on held-out instances under new random conditions with "
                            "t 0.8-1: cand is the weaker checkpoint there") for s in where["sentences"])


def test_a_weakness_of_different_size_in_each_of_three_files_is_said_where_welch_over_files_cannot_be(
        tmp_path: Path) -> None:
    """Three files a recipe: every weak file loses in the top fifth of t, by 50-100% of it. Welch's test over 3 + 3
    files has about 2 degrees of freedom and fails Holm over the cells; every one of the 9 pairs of files says the
    cell over the paired instances, so the recipe's cell is said, and confirmed over the files."""
    rng, runs = np.random.default_rng(5), tmp_path / "runs"
    weak = (f"{plane.MODULE}.predict_weak_t", f"{MODULE}.predict_weak_t_from_086", f"{MODULE}.predict_weak_t_from_09")
    strong = (f"{plane.MODULE}.predict_strong", f"{MODULE}.predict_strong_seed1", f"{MODULE}.predict_strong_seed2")
    for seed, (w, s) in enumerate(zip(weak, strong)):
        _write(runs / f"w{seed}", "cand", w, seed, True, rng)
        _write(runs / f"s{seed}", "base", s, seed, False, rng)
    where = compare_runs([runs], tmp_path / "out", where=Settings(instances=20))["groups"][0]["where"]
    top = next(r for r in where["sensitivity"]["pairs"] if (r["factor"], r["kind"], r["fifth"]) == ("t", "fifth", 4))
    assert top["p_holm"] > 0.05 and top["p"] < 0.05             # over the files alone: not after Holm
    assert top["said"] and top["pairs_said"] == top["pairs"] == 9 and top["p_holm_pairs"] < 0.05
    assert {(r["factor"], r["fifth"], r["a"] if r["diff"] < 0 else r["b"])
            for r in where["sensitivity"]["pairs"] if r["said"] and r["kind"] == "fifth"} == {("t", 4, "cand")}
    assert any("said in each of the 9 pairs of files, tested over 20 held-out instances" in s for s in where["sentences"])
    [check] = where["recipe_checks"]
    assert (check["factor"], check["weaker"]) == ("t", "cand")


def test_a_weakness_in_one_file_only_is_not_said_about_the_recipe(tmp_path: Path) -> None:
    _recipes(tmp_path / "runs", weak_in_seed1=False)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out", where=Settings(instances=20))["groups"]
    where = group["where"]
    assert where["recipe_checks"] == []                     # nothing said, nothing to confirm
    assert not any(r["said"] and r["factor"] == "t" for r in where["sensitivity"]["pairs"])
    cell = next(r for r in where["sensitivity"]["pairs"] if (r["factor"], r["kind"], r["fifth"]) == ("t", "fifth", 4))
    assert cell["agree"] < cell["pairs"]                     # one of cand's files has the weakness, the other not

    # replay loads each seed's own file
    [runs] = group_runs(discover_runs([tmp_path / "runs"]))
    assert target_value(runs, "cand", 1)["function"].endswith("predict_strong_seed1")
    assert target_value(runs, "cand", 0)["function"].endswith("predict_weak_t")
