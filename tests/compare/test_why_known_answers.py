"""Why one checkpoint is weaker: the gap attributed by intervention, with answers known before the comparison runs.

A world of four factors renders condition ``(a, b, d, c)`` as the pixels ``[a, b, d, c, label]``; ``a``, ``b`` and
``d`` range over [-1, 1] with reference 0, ``c`` over [0, 1] has none, and ``a`` with ``b`` is a group ("ab").
Function targets read the pixels: ``weak_ab`` is wrong where ``|a| > 0.5`` or ``|b| > 0.5`` (a weakness that spans
two factors, at both ends of each) and, like ``strong``, wherever ``d > 0.6``. Expected, over uniform conditions:

- accuracy: weak_ab 0.25 x 0.8 = 0.2, strong 0.8: gap -0.6;
- a alone at its reference: weak_ab 0.5 x 0.8 = 0.4: a explains -0.2 (b likewise);
- a and b together: weak_ab 0.8: the group explains all of it (-0.6);
- d at its reference: weak_ab 0.25, strong 1: the gap widens to -0.75, d *hides* 0.15;
- c: no reference, no intervention.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

from advaudit.compare import compare_runs
from advaudit.compare.where.confirm import Settings
from advaudit.compare.where.sensitivity import measure as sensitivity
from advaudit.compare.why.attribution import Sides, attribute
from advaudit.compare.why.measure import measure
from advaudit.compare.why.plan import interventions
from advaudit.compare.why.words import gap_move
from advaudit.models import load_target
from advaudit.worlds.protocol import Factor, Instances
from tests.compare.fixtures import write_worst_case

MODULE = __name__
WORLD = {"_target_": f"{MODULE}.KnobWorld"}


class KnobWorld:
    """400 instances per split of two classes; factors ``a``, ``b``, ``d`` (reference 0) and ``c`` (none)."""

    factors = [Factor("a", -1.0, 1.0), Factor("b", -1.0, 1.0), Factor("d", -1.0, 1.0), Factor("c", 0.0, 1.0)]
    class_names = ["x", "y"]
    image_shape = (1, 1, 5)

    def reference_values(self) -> dict[str, float | None]:
        return {"a": 0.0, "b": 0.0, "d": 0.0, "c": None}

    def factor_groups(self) -> dict[str, list[str]]:
        return {"ab": ["a", "b"]}

    def instances(self, split: str) -> Instances:
        labels = torch.arange(400) % 2
        return Instances(labels.float()[:, None], labels, torch.arange(400) + (0 if split == "val" else 1000))

    def render(self, z: Instances, s: Tensor) -> Tensor:
        n, q, _ = s.shape
        label = z.labels.float()[:, None, None].expand(n, q, 1)
        return torch.cat([s.float(), label], -1).reshape(n * q, 1, 1, 5)


def _probs(x: Tensor, right: Tensor) -> Tensor:
    label = x.reshape(len(x), 5)[:, 4].round().long()
    true_prob = torch.where(right, 0.9, 0.2)
    return torch.stack([1 - true_prob, 1 - true_prob], 1).scatter(1, label[:, None], true_prob[:, None])


def _wrong_everywhere(x: Tensor, threshold: float = 0.5) -> Tensor:
    a, b, d = (x.reshape(len(x), 5)[:, i] for i in range(3))
    return (a.abs() > threshold) | (b.abs() > threshold) | (d > 0.6)


def predict_weak_ab(x: Tensor) -> Tensor:
    return _probs(x, ~_wrong_everywhere(x))


def predict_weak_ab_wider(x: Tensor) -> Tensor:
    """The same weakness a little narrower (|a| or |b| > 0.55): a second training seed of the weak recipe."""
    return _probs(x, ~_wrong_everywhere(x, 0.55))


def predict_strong(x: Tensor) -> Tensor:
    return _probs(x, ~(x.reshape(len(x), 5)[:, 2] > 0.6))


def predict_strong_nearly(x: Tensor) -> Tensor:
    """The strong recipe's second seed: also wrong where d > 0.58."""
    return _probs(x, ~(x.reshape(len(x), 5)[:, 2] > 0.58))


def _block(fn: str, name: str) -> dict:
    return {"function": f"{MODULE}.predict_{fn}", "class_names": ["x", "y"], "input_shape": [1, 1, 5],
            "normalization": "model", "name": name}


def _measured(units: dict[str, str], n: int = 300, m: int = 40):
    world = KnobWorld()
    targets = {unit: _load(fn) for unit, fn in units.items()}
    z = world.instances("test").subset(torch.arange(n))
    s = torch.rand(n, m, 4, generator=torch.Generator().manual_seed(0))
    s[..., :3] = s[..., :3] * 2 - 1
    plan = interventions(world)
    return world, plan, measure(world, z, s, plan, targets)


def _load(fn: str):
    return load_target(_block(fn, fn), device="cpu")


def test_the_plan_has_the_factors_with_a_reference_their_group_and_all_of_them() -> None:
    plan = interventions(KnobWorld(), {"ad": ["a", "d"]})
    assert [(k.name, k.factors, k.kind) for k in plan] == [
        ("a", ("a",), "factor"), ("b", ("b",), "factor"), ("d", ("d",), "factor"), ("ab", ("a", "b"), "group"),
        ("ad", ("a", "d"), "group"), ("every factor", ("a", "b", "d"), "all")]
    with pytest.raises(Exception, match="compare.factor_groups.bad names"):
        interventions(KnobWorld(), {"bad": ["a", "zz"]})


def test_two_files_a_two_factor_cause_is_named_and_a_factor_that_hides_the_gap_is_said() -> None:
    _, plan, measured = _measured({"w": "weak_ab", "s": "strong"})
    result = attribute(measured, plan, Sides("weak", "strong", ("w",), ("s",)))
    rows = {r["name"]: r for r in result["rows"]}
    assert result["gap"]["diff"] == pytest.approx(-0.6, abs=0.03) and result["design"] == "files"
    assert rows["a"]["diff"] == pytest.approx(-0.2, abs=0.03) and rows["b"]["diff"] == pytest.approx(-0.2, abs=0.03)
    assert rows["ab"]["diff"] == pytest.approx(-0.6, abs=0.03) and rows["ab"]["remaining"] == pytest.approx(0, abs=0.03)
    assert rows["d"]["relation"] == "hides" and rows["d"]["diff"] == pytest.approx(0.15, abs=0.03) and rows["d"]["said"]
    assert all(rows[k]["said"] and rows[k]["relation"] == "explains" for k in ("a", "b", "ab"))
    assert result["headline"] == "ab"                      # the two factors, not "every factor" nor one of them


def test_two_recipes_are_attributed_over_their_files_and_identical_recipes_get_nothing() -> None:
    units = {"w1": "weak_ab", "w2": "weak_ab_wider", "s1": "strong", "s2": "strong_nearly"}
    _, plan, measured = _measured(units)
    result = attribute(measured, plan, Sides("weak", "strong", ("w1", "w2"), ("s1", "s2")))
    rows = {r["name"]: r for r in result["rows"]}
    assert result["design"] == "recipes" and result["gap"]["test"] == "Welch t over files"
    assert rows["ab"]["pairs"] == 4 and rows["ab"]["agree"] == 4 and rows["ab"]["diff"] < -0.5
    same = attribute(measured, plan, Sides("w", "w again", ("w1", "w2"), ("w2", "w1")))
    assert same["gap"]["diff"] == pytest.approx(0) and not any(r["said"] for r in same["rows"])
    assert same["headline"] is None


def _write(run_dir: Path, name: str, fn: str, seed: int = 0) -> None:
    path = write_worst_case(run_dir, name, seed, np.full(20, 0.5), np.zeros(20, bool), instances=list(range(20)))
    result = json.loads(path.read_text())
    result["config"].update(target=_block(fn, name), world=WORLD)
    for row in result["per_instance"]:
        row.update(label=row["instance"] % 2, **{"class": KnobWorld.class_names[row["instance"] % 2]})
    path.write_text(json.dumps(result))


def test_the_comparison_says_why_in_words_with_a_figure(tmp_path: Path) -> None:
    _write(tmp_path / "runs" / "weak", "weak_ab", "weak_ab")
    _write(tmp_path / "runs" / "strong", "strong", "strong")
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out")["groups"]
    why = group["why"]
    assert why["instances"] == 200 and why["conditions_per_instance"] == 4 and why["cost"]["renders"] == 800 * 6
    assert any(s.startswith("With a and b at their reference (0, 0), the gap between") and "falls from" in s
               for s in why["sentences"])
    assert any(s.startswith("With d at its reference (0)") and "widens" in s and "it hides" in s
               for s in why["sentences"]) and Path(why["plot"]).is_file()
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "### Why one checkpoint is weaker" in text and "![why](why_" in text


def predict_weak_ad(x: Tensor) -> Tensor:
    """Wrong where |a| > 0.5 or |d| > 0.5: a cause that spans two factors of no common group."""
    a, d = x.reshape(len(x), 5)[:, 0], x.reshape(len(x), 5)[:, 2]
    return _probs(x, ~((a.abs() > 0.5) | (d.abs() > 0.5)))


def predict_right(x: Tensor) -> Tensor:
    return _probs(x, torch.ones(len(x), dtype=torch.bool))


def test_a_cause_across_groups_is_named_by_its_leading_combination_once_confirmed(tmp_path: Path) -> None:
    """a and d each explain a third of the gap alone (-0.75: weak_ad 0.25, right 1.0), no group holds both, every
    factor holds b too: the leading combination "a + d" is rendered, confirmed on the other 200 instances and
    heads the section; b is not in it."""
    _write(tmp_path / "runs" / "weak", "weak_ad", "weak_ad")
    _write(tmp_path / "runs" / "right", "right", "right")
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out")["groups"]
    why = group["why"]
    [result] = why["pairs"]
    rows = {r["name"]: r for r in result["rows"]}
    sign = 1 if result["a"] == "right" else -1                                         # right − weak_ad = +0.75
    assert sign * result["gap"]["diff"] == pytest.approx(0.75, abs=0.04)
    assert sign * rows["a"]["diff"] == pytest.approx(0.25, abs=0.04) and sign * rows["d"]["diff"] == pytest.approx(0.25, abs=0.04)
    leading_row = rows.get("a + d") or rows["d + a"]
    assert leading_row["kind"] == "leading" and sign * leading_row["diff"] == pytest.approx(0.75, abs=0.04)
    assert leading_row["confirmation"]["confirmed"] and result["headline"] == leading_row["name"]
    assert why["cost"]["renders"] == 800 * 6 + 800 + 800 * 2     # as drawn + 5 planned, 1 leading; confirmation: as drawn + it
    assert any(s.startswith("Confirmed on 200 other held-out instances (the factors that explain most alone")
               for s in why["sentences"])


def test_a_leading_combination_is_only_what_explains_and_never_a_planned_set() -> None:
    from advaudit.compare.why.plan import leading
    plan = interventions(KnobWorld())
    rows = [{"kind": "factor", "factors": [f], "relation": rel, "diff": diff}
            for f, rel, diff in (("a", "explains", -0.1), ("b", "hides", 0.2), ("d", "explains", -0.3))]
    assert [(k.name, k.factors) for k in leading(rows, plan)] == [("d + a", ("d", "a"))]
    rows[1]["relation"] = "explains"                          # a, b, d: every factor's set, already planned
    assert [k.name for k in leading(rows, plan)] == ["d + b"]


def predict_u_shaped(x: Tensor) -> Tensor:
    """Wrong on about a quarter of the views with |a| > 0.6, at both ends of a's range (pseudo-random per view)."""
    a, b = x.reshape(len(x), 5)[:, 0], x.reshape(len(x), 5)[:, 1]
    coin = torch.frac(torch.sin(a * 12.9898 + b * 78.233) * 43758.5453).abs()
    return _probs(x, ~((a.abs() > 0.6) & (coin < 0.25)))


def test_a_loss_at_both_ends_is_one_band_with_more_evidence_than_either_outer_fifth() -> None:
    """The far band (|a| >= 0.6 from the reference 0) holds both outer fifths' conditions: its test of the same
    U-shaped loss has a smaller p-value than either fifth's, and it is said in words that name both ends."""
    world = KnobWorld()
    targets = {"u": _load("u_shaped"), "s": _load("strong")}
    z = world.instances("test").subset(torch.arange(120))
    record = sensitivity(world, z, targets, {"u": ("u",), "s": ("s",)}, 3, Settings(random_conditions=60))
    rows = {(r["factor"], r["kind"], r["fifth"]): r for r in record["pairs"]}
    band, low, high = rows[("a", "band", 2)], rows[("a", "fifth", 0)], rows[("a", "fifth", 4)]
    assert band["low"] == pytest.approx(0.6) and band["high"] == pytest.approx(1.0)
    assert band["p"] < min(low["p"], high["p"]) and band["said"]
    assert band["place"] == "a 0.6-1 from 0, both ends"
    assert not rows[("b", "band", 2)]["said"]                                  # b does nothing to either


def test_the_headline_is_measured_against_the_gap_not_against_a_group_that_overshoots_it() -> None:
    """One factor explains 83% of a -9.9-point gap, a group 160% (the other checkpoint is worse on reference views):
    the factor heads, as it does on the rotation recipe; without the gap the group would."""
    from advaudit.compare.why.attribution import headline_of
    rows = [{"name": "rotation", "factors": ["rotation"], "said": True, "relation": "explains", "diff": -0.082},
            {"name": "geometric", "factors": ["rotation", "scale", "shear"], "said": True, "relation": "explains",
             "diff": -0.159}]
    assert headline_of(rows, -0.099)["name"] == "rotation"
    assert headline_of(rows)["name"] == "geometric"
    assert headline_of(rows, -0.30)["name"] == "geometric"          # a gap the factor explains too little of


def test_a_gap_that_changes_sides_is_said_to_reverse() -> None:
    """+4.2 -> -7.0 (the other checkpoint ahead by more once the factor is at its reference) reverses; a smaller
    gap falls, even across zero; a larger one on the same side widens."""
    assert gap_move(4.2, -7.0) == "reverses"
    assert gap_move(7.5, -1.2) == "falls"
    assert gap_move(-4.0, -7.4) == "widens"
