"""Where one checkpoint is weaker than the other: tested between checkpoints, confirmed, per fifth.

Known answers: worst cases planted in one factor's region for one checkpoint are found and that
region proposed (on an interval and across the seam of a circle); two samples of one distribution
propose none. A two-factor world renders condition ``(t, angle)`` as the pixels ``[t, angle / 360,
label]``; function targets read them, so each target's weak region is known before the comparison
runs: ``weak_t`` gives the true class 0.2 where ``t >= 0.8`` (0.9 elsewhere), ``strong`` 0.9 everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

from advaudit.compare import compare_runs
from advaudit.compare.render.html import where_html
from advaudit.compare.where.confirm import region_conditions
from advaudit.compare.where.regions import Axis, between_checkpoints, strongest
from advaudit.compare.where.cells import said
from advaudit.compare.where.sensitivity import fifth_index, per_fifth
from advaudit.core.statistics import holm, kuiper_statistic
from advaudit.worlds.protocol import Factor, Instances
from tests.compare.fixtures import write_worst_case

MODULE = __name__
T, ANGLE = Axis("t", 0.0, 1.0), Axis("angle", 0.0, 360.0, "deg", periodic=True)
SPLITS = {"val": 0, "test": 100}   # instance ids: val 0..39, test 100..139
WORLD = {"_target_": f"{MODULE}.PlaneWorld"}


class PlaneWorld:
    """40 instances per split of two classes; conditions ``t`` in [0, 1] and ``angle`` on a circle."""

    factors = [Factor("t", 0.0, 1.0), Factor("angle", 0.0, 360.0, "deg", period=360.0)]
    class_names = ["a", "b"]
    image_shape = (1, 1, 3)

    def instances(self, split: str) -> Instances:
        labels = torch.arange(40) % 2
        return Instances(labels.float()[:, None], labels, torch.arange(40) + SPLITS[split])

    def render(self, z: Instances, s: Tensor) -> Tensor:
        """``s`` ``[N, q, 2]`` -> ``[N*q, 1, 1, 3]``."""
        n, q, _ = s.shape
        label = z.labels.float()[:, None, None].expand(n, q, 1)
        pixels = torch.cat([s[..., :1].float(), s[..., 1:].float() / 360, label], -1)
        return pixels.reshape(n * q, 1, 1, 3)


def _probs(x: Tensor, true_prob: Tensor) -> Tensor:
    label = x.reshape(len(x), 3)[:, 2].round().long()
    return torch.stack([1 - true_prob, 1 - true_prob], 1).scatter(1, label[:, None], true_prob[:, None])


def predict_weak_t(x: Tensor) -> Tensor:
    """True class 0.2 where ``t >= 0.8``, else 0.9."""
    t = x.reshape(len(x), 3)[:, 0]
    return _probs(x, torch.where(t >= 0.8, 0.2, 0.9))


def predict_strong(x: Tensor) -> Tensor:
    return _probs(x, torch.full((len(x),), 0.9))


BLOCKS = {name: {"function": f"{MODULE}.predict_{fn}", "class_names": ["a", "b"], "input_shape": [1, 1, 3],
                 "normalization": "model", "name": name}
          for name, fn in (("weak_t", "weak_t"), ("strong", "strong"), ("twin", "strong"))}


def _values(rng: np.random.Generator, n: int, planted: bool) -> dict[str, np.ndarray]:
    t = np.concatenate([rng.uniform(0.8, 1.0, int(0.8 * n)), rng.uniform(0, 1, n - int(0.8 * n))]) if planted \
        else rng.uniform(0, 1, n)
    return {"t": t, "angle": rng.uniform(0, 360, n)}


def test_a_planted_region_is_found_and_proposed_and_a_control_proposes_none() -> None:
    rng = np.random.default_rng(0)
    weak, other = _values(rng, 40, True), _values(rng, 40, False)
    values = {f: {"weak": weak[f], "other": other[f]} for f in ("t", "angle")}
    tests = holm(between_checkpoints(values, [T, ANGLE], ("weak", "other")))
    best = strongest(tests)
    assert best.factor == "t" and best.test == "KS" and best.proposed()
    assert best.suspect == "weak" and best.region == pytest.approx((0.8, 1.0))
    assert best.share_suspect >= 0.8 and best.share_other == pytest.approx(float((other["t"] >= 0.8).mean()))
    angle = next(t for t in tests if t.factor == "angle")
    assert angle.test.startswith("Kuiper") and not angle.proposed()
    same = {f: {"weak": _values(rng, 40, False)[f], "other": _values(rng, 40, False)[f]} for f in ("t", "angle")}
    assert not strongest(holm(between_checkpoints(same, [T, ANGLE], ("weak", "other")))).proposed()


def test_a_cluster_across_the_seam_of_a_circle_is_one_region() -> None:
    rng = np.random.default_rng(1)
    seam = np.mod(rng.uniform(-30, 30, 40), 360)                  # 330..360 and 0..30: one arc
    values = {"angle": {"a": seam, "b": rng.uniform(0, 360, 40)}}
    [test] = holm(between_checkpoints(values, [ANGLE], ("a", "b")))
    assert test.proposed() and test.suspect == "a"
    low, high = test.region
    assert low > high and (low, high) in ((324.0, 36.0),)         # the arc through 0/360 deg
    assert test.share_suspect >= 0.95


def test_the_two_sample_kuiper_statistic_does_not_depend_on_where_the_circle_is_cut() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.uniform(0, 1, 25), rng.uniform(0, 1, 30) ** 2
    for shift in (0.1, 0.37, 0.8):
        assert kuiper_statistic(np.mod(x + shift, 1), np.mod(y + shift, 1)) == pytest.approx(kuiper_statistic(x, y))
    assert kuiper_statistic(x, x) == 0.0
    ties_x, ties_y = np.array([0.0, 0.0, 0.0, 0.5, 0.9]), np.array([0.0, 0.5, 0.5, 0.5, 0.7, 0.7])
    grid = np.concatenate([ties_x, ties_y])     # the definition: max over every point of F_x - F_y and F_y - F_x
    gap = (ties_x[:, None] <= grid).mean(0) - (ties_y[:, None] <= grid).mean(0)
    assert kuiper_statistic(ties_x, ties_y) == pytest.approx(max(gap.max(), 0) + max((-gap).max(), 0))
    batch = np.stack([x[:20], y[:20]])          # batched over a leading axis, as permutation_test calls it
    assert kuiper_statistic(batch, batch[::-1]) == pytest.approx([kuiper_statistic(x[:20], y[:20])] * 2)


@pytest.mark.slow
def test_the_between_checkpoint_test_holds_its_level_under_the_null() -> None:
    rng = np.random.default_rng(3)
    proposed = 0
    for replication in range(60):
        values = {f: {"a": _values(rng, 30, False)[f], "b": _values(rng, 30, False)[f]} for f in ("t", "angle")}
        proposed += strongest(holm(between_checkpoints(values, [T, ANGLE], ("a", "b"), seed=replication))).proposed()
    assert proposed <= 7          # 5% of 60 = 3 expected; 7 or more has probability < 3%


def test_region_conditions_are_seeded_and_inside_the_region_across_the_seam() -> None:
    factors = PlaneWorld.factors
    s = region_conditions(factors, 5, 50, "angle", (324.0, 36.0), seed=4)
    assert torch.equal(s, region_conditions(factors, 5, 50, "angle", (324.0, 36.0), seed=4))
    angle = s[..., 1]
    assert bool(((angle >= 324) | (angle <= 36)).all()) and bool((angle < 36).any()) and bool((angle > 324).any())
    assert float(s[..., 0].min()) < 0.1 and float(s[..., 0].max()) > 0.9   # the other factor: all of its range


def test_accuracy_per_fifth_counts_each_instances_conditions_in_each_fifth() -> None:
    correct = np.array([[1, 0, 1, 1], [0, 0, 1, 1]], float)
    fifth = fifth_index(np.array([[0.05, 0.1, 0.95, 1.0], [0.3, 0.35, 0.5, 0.5]]), 0.0, 1.0)
    assert fifth.tolist() == [[0, 0, 4, 4], [1, 1, 2, 2]]
    got = per_fifth(correct, fifth)
    assert got[0, 0] == 0.5 and got[0, 4] == 1.0 and got[1, 1] == 0.0 and got[1, 2] == 1.0
    assert np.isnan(got[0, 1]) and np.isnan(got[1, 4])


def _write(run_dir: Path, name: str, rng: np.random.Generator, planted: bool) -> None:
    values = _values(rng, 40, planted)
    worst_s = [{"t": float(t), "angle": float(a)} for t, a in zip(values["t"], values["angle"])]
    worst = np.full(40, 0.2 if planted else 0.9)
    path = write_worst_case(run_dir, name, 0, worst, worst < 0.5, worst_s=worst_s, instances=list(range(40)))
    result = json.loads(path.read_text())
    result["config"].update(target=BLOCKS[name], world=WORLD)
    for row in result["per_instance"]:
        row.update(label=row["instance"] % 2, **{"class": PlaneWorld.class_names[row["instance"] % 2]})
    path.write_text(json.dumps(result))


def test_a_sensitivity_row_is_said_only_beyond_the_smallest_difference_worth_reporting() -> None:
    """A 2-point interaction [1, 3] (two seeds of one recipe) is significant but not said at the default 3 points."""
    small = {"p_holm": 1e-4, "diff": 0.02, "lo": 0.01, "hi": 0.03, "in_fifth": {"lo": 0.01, "hi": 0.05}}
    large = {"p_holm": 1e-4, "diff": -0.05, "lo": -0.07, "hi": -0.035, "in_fifth": {"lo": -0.2, "hi": -0.1}}
    assert said(small, min_points=0) and not said(small, min_points=3)
    assert said(large, min_points=3) and not said(large, min_points=4)
    assert not said({**large, "p_holm": 0.2}, min_points=0)                  # not significant: never said
    assert not said({**large, "in_fifth": {"lo": 0.01, "hi": 0.1}}, min_points=0)   # more accurate there: not "loses"


def test_the_comparison_names_the_weak_checkpoint_in_its_region_with_the_known_difference(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    _write(tmp_path / "runs" / "weak", "weak_t", rng, planted=True)
    _write(tmp_path / "runs" / "strong", "strong", rng, planted=False)
    summary = compare_runs([tmp_path / "runs"], tmp_path / "out")
    [group] = summary["groups"]
    assert not group["notes"], group["notes"]
    where = group["where"]
    [pair] = where["pairs"]
    assert pair["proposed"]["factor"] == "t" and pair["proposed"]["region"] == pytest.approx([0.8, 1.0])
    check = pair["confirmation"]
    assert check["weaker"] == "weak_t" and check["split"] == "test"
    assert check["instances"] == list(range(100, 140))                      # held out: not the examined 0..39
    sign = 1 if check["a"] == "weak_t" else -1                               # a - b
    assert sign * check["diff"] == pytest.approx(-0.7) and check["p_holm"] < 1e-6   # 0.2 vs 0.9 in the region
    assert check["accuracy"] == {"weak_t": 0.0, "strong": 1.0}
    assert "weak_t is the weaker checkpoint there" in check["words"]
    rows = [r for r in where["sensitivity"]["pairs"] if r["said"]]
    assert [(r["factor"], r["fifth"]) for r in rows] == [("t", 4)]           # only t 0.8-1, nothing in angle
    assert rows[0]["words"].startswith("At t 0.8-1 weak_t is the less accurate (0.00 vs 1.00)")
    assert "points worse there than strong" in rows[0]["words"]
    loses = -sign * rows[0]["diff"]                                          # = weak_t's accuracy over all of S
    assert loses == pytest.approx(where["sensitivity"]["overall"]["weak_t"]["mean"], abs=1e-9)
    assert 0.7 < loses < 0.9
    assert Path(where["plot"]).is_file()
    fragment = where_html(where)
    assert "weak_t is the weaker checkpoint there" in fragment and "data:image/png;base64," in fragment
    body = fragment.removeprefix('<section class="where">\n').removesuffix("\n</section>")
    assert body in (tmp_path / "out" / "comparison.html").read_text()    # one renderer: the page shows the same
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "### Where one checkpoint is weaker than the other" in text and "weak_t is the weaker" in text
    stored = json.loads((tmp_path / "out" / "comparison.json").read_text())["groups"][0]["where"]
    redrawn = region_conditions(PlaneWorld.factors, 40, stored["pairs"][0]["confirmation"]["conditions_per_instance"],
                                "t", (0.8, 1.0), stored["pairs"][0]["confirmation"]["seed"])
    assert float(redrawn[..., 0].min()) >= 0.8                              # reproducible from the record


def test_identical_checkpoints_get_no_region_and_each_pair_is_checked_on_its_own(tmp_path: Path) -> None:
    """Three checkpoints: strong and its twin are identical; weak_t is weak at t >= 0.8 against both."""
    rng = np.random.default_rng(6)
    _write(tmp_path / "runs" / "strong", "strong", rng, planted=False)
    _write(tmp_path / "runs" / "twin", "twin", rng, planted=False)
    _write(tmp_path / "runs" / "weak", "weak_t", rng, planted=True)
    [group] = compare_runs([tmp_path / "runs"], tmp_path / "out")["groups"]
    pairs = {frozenset((p["a"], p["b"])): p for p in group["where"]["pairs"]}
    alike = pairs[frozenset(("strong", "twin"))]
    assert alike["proposed"] is None and alike["confirmation"] is None
    for other in ("strong", "twin"):
        check = pairs[frozenset(("weak_t", other))]["confirmation"]
        assert check["weaker"] == "weak_t" and check["region"] == pytest.approx([0.8, 1.0])
        assert check["p"] < 1e-6 and check["p_holm"] == pytest.approx(min(1.0, 2 * check["p"]))   # Holm over 2
    said = [r for r in group["where"]["sensitivity"]["pairs"] if r["said"]]
    assert {frozenset((r["a"], r["b"])) for r in said} == {frozenset(("weak_t", "strong")), frozenset(("weak_t", "twin"))}
    assert {(r["factor"], r["fifth"]) for r in said} == {("t", 4)}
