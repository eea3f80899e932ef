"""The label-preservation checks with thresholds that bite: object height, the reference judge's
``reference_min_prob`` and its re-render at its own image size."""

from __future__ import annotations

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.worlds import validity
from advaudit.worlds.protocol import DEFAULT_MIN_PROB, unit_to_factor
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.settings import ValidityConf
from advaudit.worlds.validity import REFERENCE_CHECK, ValidityJudge, mask_checks

WORLD = ShapeWorld(image_size=16, instances_per_class={"test": 1}, classes=["mug", "chair"])


def test_mask_checks_measure_the_longer_extent_and_the_border() -> None:
    # catches: the shorter axis used (2 px here), an off-by-one extent (3 or 5), '>' for '>=',
    # an empty mask given an extent, or the border check dropped (extents are shares of the 10 px side)
    masks = torch.zeros(3, 10, 10, dtype=torch.bool)
    masks[0, 2:6, 3:5] = True  # 4 rows by 2 columns, inside the frame
    masks[1, 0:3, 4] = True  # 3 rows touching the top border
    # masks[2] empty
    at_four, at_five = mask_checks(masks, 0.4), mask_checks(masks, 0.5)
    assert at_four["min_extent"].tolist() == [True, False, False]
    assert at_five["min_extent"].tolist() == [False, False, False]
    assert mask_checks(masks, 0.3)["min_extent"].tolist() == [True, True, False]
    assert mask_checks(masks, 0)["min_extent"].tolist() == [True, True, True]
    assert at_four["in_frame"].tolist() == [True, False, True]


def test_shape_world_judge_refuses_objects_smaller_than_min_extent() -> None:
    # catches: the min-height check not applied by the judge, compared against the wrong extent, or
    # not folded into ``valid``
    z = WORLD.instances("test")
    s = unit_to_factor(torch.full((len(z), 1, 12), 0.5), WORLD.factors)
    masks = WORLD.render_masks(z, s)
    rows, cols = masks.any(2), masks.any(1)
    height = [max(int(r.nonzero().max() - r.nonzero().min() + 1), int(c.nonzero().max() - c.nonzero().min() + 1))
              for r, c in zip(rows, cols)]
    assert min(height) >= 2  # the objects are visible at this condition
    for i, h in enumerate(height):
        one, s_one = z.subset(torch.tensor([i])), s[i:i + 1]
        judge = ValidityJudge(WORLD, ValidityConf(in_frame=False, min_extent=h / WORLD.image_size))
        assert judge.checks == ["min_extent"]
        _, valid, checks = judge.render(one, s_one)
        assert valid.tolist() == [[True]] and checks["min_extent"].tolist() == [[True]]
        _, valid, checks = ValidityJudge(WORLD, ValidityConf(in_frame=False, min_extent=(h + 1) / WORLD.image_size)).render(one, s_one)
        assert valid.tolist() == [[False]] and checks["min_extent"].tolist() == [[False]]


class _Reference:
    """A stand-in reference judge: fixed probabilities per render, and the image sizes it was shown."""

    class_names = ["mug", "chair"]

    def __init__(self, probs: torch.Tensor, size: int = 16) -> None:
        self.probs, self.input_shape, self.shown = probs, (3, size, size), []
        self.meta = {"class_names": list(self.class_names)}

    def predict_proba(self, x: torch.Tensor, calibrated: bool = False) -> torch.Tensor:
        self.shown.append(tuple(x.shape[1:]))
        return self.probs


def _judge_with(monkeypatch, reference: _Reference, **rules) -> ValidityJudge:
    monkeypatch.setattr(validity, "load_target", lambda path, device="cpu": reference)
    return ValidityJudge(WORLD, ValidityConf(in_frame=False, min_extent=0.0, reference="ref.pt", **rules))


def test_reference_counts_only_confident_correct_answers(monkeypatch) -> None:
    # catches: '>' for '>=' at the threshold, the threshold ignored (0.6 passes),
    # or a wrong answer counted because its true-class probability clears
    # the threshold (correctness dropped)
    z = WORLD.instances("test")  # labels [0, 1]
    s = unit_to_factor(torch.full((len(z), 2, 12), 0.5), WORLD.factors)
    probs = torch.tensor([[0.75, 0.25],   # item 0 (mug), render 0: true 0.75 = threshold -> valid
                          [0.60, 0.40],   # item 0, render 1: correct but 0.60 < 0.75 -> invalid
                          [0.20, 0.80],   # item 1 (chair), render 0: true 0.80 -> valid
                          [0.60, 0.40]])  # item 1, render 1: wrong (true 0.40) -> invalid
    judge = _judge_with(monkeypatch, _Reference(probs), reference_min_prob=0.75)
    assert judge.checks == [REFERENCE_CHECK]
    _, valid, checks = judge.render(z, s)
    assert checks[REFERENCE_CHECK].tolist() == [[True, False], [True, False]]
    assert valid.tolist() == [[True, False], [True, False]]
    # a threshold under one half lets the unconfident correct answer through, never the wrong one whose
    # true-class probability (0.40) clears it
    _, valid, _ = _judge_with(monkeypatch, _Reference(probs), reference_min_prob=0.35).render(z, s)
    assert valid.tolist() == [[True, True], [True, False]]


def test_an_unset_threshold_is_the_worlds_own_and_a_set_one_wins(monkeypatch) -> None:
    # catches: the world's declared threshold ignored (0.99 used), or it overriding the user's setting
    z = WORLD.instances("test")  # labels [0, 1]
    s = unit_to_factor(torch.full((len(z), 1, 12), 0.5), WORLD.factors)
    probs = torch.tensor([[0.85, 0.15], [0.25, 0.75]])  # true classes at 0.85 and 0.75
    assert validity.min_prob(WORLD, ValidityConf()) == DEFAULT_MIN_PROB == 0.99  # ShapeWorld's
    assert _judge_with(monkeypatch, _Reference(probs)).render(z, s)[1].tolist() == [[False], [False]]
    monkeypatch.setattr(type(WORLD), "reference_min_prob", 0.8, raising=False)
    assert _judge_with(monkeypatch, _Reference(probs)).render(z, s)[1].tolist() == [[True], [False]]
    judge = _judge_with(monkeypatch, _Reference(probs), reference_min_prob=0.7)
    assert judge.min_prob == 0.7 and judge.render(z, s)[1].tolist() == [[True], [True]]


def test_reference_of_another_size_sees_the_scenes_rendered_at_its_size(monkeypatch) -> None:
    # catches: the target-size images handed to the reference, or the scenes re-rendered differently
    z = WORLD.instances("test")
    s = unit_to_factor(torch.rand(len(z), 1, 12, generator=torch.Generator().manual_seed(0)), WORLD.factors)
    reference = _Reference(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), size=24)
    judge = _judge_with(monkeypatch, reference)
    images, valid, _ = judge.render(z, s)
    assert images.shape[1:] == (3, 16, 16) and reference.shown == [(3, 24, 24)]
    assert valid.all()
    assert torch.equal(judge.reference_world.render(z, s), ShapeWorld(
        image_size=24, instances_per_class={"test": 1}, classes=["mug", "chair"]).render(z, s))
    reference.shown.clear()
    _judge_with(monkeypatch, same := _Reference(reference.probs, size=16)).render(z, s)
    assert same.shown == [(3, 16, 16)]


def test_reference_of_another_channel_count_is_refused(monkeypatch) -> None:
    reference = _Reference(torch.zeros(2, 2), size=16)
    reference.input_shape = (1, 16, 16)
    with pytest.raises(AdvauditError, match="cannot change its size"):
        _judge_with(monkeypatch, reference)
