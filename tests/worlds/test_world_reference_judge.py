"""The default validity check's reference judge: ShapeWorld's packaged judge, where it was trained."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advaudit.worlds.settings import ValidityConf
from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.shapes.catalogue import CLASSES
from advaudit.worlds.shapes.world import REFERENCE_JUDGE
from advaudit.worlds.validity import REFERENCE_CHECK, ValidityJudge, reference_path
from tests.conftest import worst_case_overrides


def test_shape_world_names_its_packaged_judge_only_where_the_judge_was_trained() -> None:
    # catches: a judge for a class subset it cannot answer for, or for bounds wider than its training box
    assert ShapeWorld(image_size=16).reference_judge() == REFERENCE_JUDGE and REFERENCE_JUDGE.is_file()
    assert ShapeWorld(factors={"camera_elevation": [-90, 90], "camera_distance": [1, 5]}).reference_judge() == REFERENCE_JUDGE
    assert ShapeWorld(factors={"camera_elevation": 10.0}).reference_judge() == REFERENCE_JUDGE  # a fixed factor
    assert ShapeWorld(classes=["mug", "chair"]).reference_judge() is None
    assert ShapeWorld(factors={"camera_distance": [1, 8]}).reference_judge() is None
    assert ShapeWorld(shadows=False).reference_judge() is None


def test_the_reference_setting_names_the_worlds_judge_a_file_or_none() -> None:
    world = ShapeWorld(image_size=16)
    assert reference_path(world, "world") == REFERENCE_JUDGE
    assert reference_path(world, None) is None
    assert reference_path(world, "~/judge.pt") == Path.home() / "judge.pt"
    assert reference_path(object(), "world") is None  # a world without reference_judge(): no reference
    assert ValidityConf().reference == "world"
    assert ValidityJudge(world, ValidityConf()).checks[-1] == REFERENCE_CHECK
    assert REFERENCE_CHECK not in ValidityJudge(world, ValidityConf(reference=None)).checks


def test_the_packaged_judge_loads_as_plain_data_and_names_random_views_of_the_default_box() -> None:
    # catches: a judge file that needs unpickling, a class order other than the world's, or a judge
    # that no longer matches the renderer (it names 0.995 of random default-box views; measured)
    judge = load_target(REFERENCE_JUDGE)
    assert list(judge.class_names) == list(CLASSES) and tuple(judge.input_shape) == (3, 32, 32)
    world = ShapeWorld(image_size=32)
    z = world.instances("val")  # 10 per class
    s = world.random_conditions(len(z), 4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        probs = judge.predict_proba(world.render(z, s))
    right = probs.argmax(1) == z.labels.repeat_interleave(4)
    assert right.float().mean() >= 0.95


def test_the_judge_that_measures_cannot_be_the_checks_own_reference(make_cfg, tiny_shapes_target: Path) -> None:
    from advaudit.tasks import examine

    with pytest.raises(AdvauditError, match="own reference judge"):
        examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, f"audit.judge={REFERENCE_JUDGE}")))
