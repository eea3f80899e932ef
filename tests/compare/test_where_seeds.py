"""A recipe replicated over training seeds (one checkpoint file per seed under one name): replay and the where
section score each seed's own file, and the report says first what every seed agrees on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from torch import Tensor

from advaudit.compare import compare_runs
from advaudit.compare.confirm import Settings
from advaudit.compare.design import group_runs
from advaudit.compare.records import discover_runs
from advaudit.compare.replay import target_value
from tests.compare import test_where_known_answers as plane
from tests.compare.fixtures import write_worst_case

MODULE = __name__


def predict_weak_t_seed1(x: Tensor) -> Tensor:
    """Seed 1 of the weak recipe: the same weakness in another file (another function)."""
    return plane.predict_weak_t(x)


def predict_strong_seed1(x: Tensor) -> Tensor:
    return plane.predict_strong(x)


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


def test_a_weakness_in_every_seed_is_said_about_the_recipe(tmp_path: Path) -> None:
    _recipes(tmp_path / "runs", weak_in_seed1=True)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out", where=Settings(instances=20))["groups"]
    assert group["targets"] == ["base", "cand"] or sorted(group["targets"]) == ["base", "cand"]
    assert any("'cand' is 2 checkpoint files, one per seed" in note for note in group["notes"])
    where = group["where"]
    assert sorted(where["per_seed"]) == ["0", "1"]
    [check] = where["recipe_checks"]
    assert (check["factor"], check["region"], check["weaker"]) == ("t", [0.8, 1.0], "cand")
    assert sorted(check["checks"]) == ["0", "1"]
    for seed, seed_check in check["checks"].items():   # confirmed on instances its sensitivity did not see
        assert seed_check["weaker"] == "cand" and seed_check["p_holm"] < 0.05
        assert not set(seed_check["instances"]) & set(where["per_seed"][seed]["sensitivity"]["instances"])
    assert where["sentences"][0].startswith("Checked in each training seed on held-out instances other than those "
                                            "that proposed it, under new random conditions with t 0.8-1: cand is "
                                            "the weaker checkpoint there in every training seed (2 of 2; seed 0: ")
    first = where["sentences"][1]
    assert first.startswith("In every training seed (2 of 2), at t 0.8-1 cand is the less accurate; ")
    assert "points worse there than base" in first
    assert any(s.startswith("Training seed 1: At t 0.8-1 cand is the less accurate") for s in where["sentences"])


def test_a_weakness_in_one_seed_only_is_not_said_about_the_recipe(tmp_path: Path) -> None:
    _recipes(tmp_path / "runs", weak_in_seed1=False)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out")["groups"]
    where = group["where"]
    assert where["recipe_checks"] == []   # nothing agreed, nothing to confirm
    assert where["sentences"][0].startswith("No fifth of any factor is said in all 2 training seeds")
    assert any(s.startswith("Training seed 0: At t 0.8-1 cand is the less accurate") for s in where["sentences"])
    assert not any(s.startswith("Training seed 1: At t 0.8-1 cand is the less accurate") for s in where["sentences"])

    # replay and the where checks load each seed's own file
    [runs] = group_runs(discover_runs([tmp_path / "runs"]))
    assert target_value(runs, "cand", 1)["function"].endswith("predict_strong_seed1")
    assert target_value(runs, "cand", 0)["function"].endswith("predict_weak_t")
