"""TransformWorld's packaged reference judge: where it sits in the default check, and what it names."""

from __future__ import annotations

import torch

from advaudit.worlds.settings import ValidityConf
from advaudit.data.fashion_mnist import CLASS_NAMES, FashionMNISTDataModule
from advaudit.models import load_target
from advaudit.worlds.transforms import JUDGE_BOX, REFERENCE_JUDGE, REFERENCE_MIN_PROB, TransformWorld
from advaudit.worlds.validity import REFERENCE_CHECK, ValidityJudge, reference_path


DATA = FashionMNISTDataModule(limit={"train": 50, "val": 50, "test": 300})


def _world(**kwargs) -> TransformWorld:
    dataset = kwargs.pop("dataset", None)
    return TransformWorld(FashionMNISTDataModule(limit={"train": 50}, **dataset) if dataset else DATA, **kwargs)


def test_transform_world_names_its_packaged_judge_only_where_the_judge_was_trained() -> None:
    # catches: the Fashion-MNIST judge put in the check for other classes, another padding or a wider box
    assert _world().reference_judge() == REFERENCE_JUDGE and REFERENCE_JUDGE.is_file()
    assert reference_path(_world(), "world") == REFERENCE_JUDGE
    assert _world(factors={"rotation": [-10, 10], "blur": 0.0}).reference_judge() == REFERENCE_JUDGE
    assert _world(factors={"rotation": [-180, 180]}).reference_judge() is None
    assert _world(factors={"blur": [0, JUDGE_BOX["blur"][1] + 0.5]}).reference_judge() is None
    assert _world(padding_mode="border").reference_judge() is None
    assert _world(dataset={"classes": ["trouser", "bag"]}).reference_judge() is None
    assert REFERENCE_CHECK in ValidityJudge(_world(), ValidityConf()).checks
    assert REFERENCE_CHECK not in ValidityJudge(_world(factors={"rotation": [-180, 180]}), ValidityConf()).checks


def test_the_check_holds_the_judge_at_the_worlds_own_threshold_unless_the_user_sets_one() -> None:
    # catches: ShapeWorld's 0.99 applied to Fashion-MNIST views, or the user's setting overridden
    assert 0.5 <= REFERENCE_MIN_PROB <= 0.99
    assert ValidityJudge(_world(), ValidityConf()).min_prob == REFERENCE_MIN_PROB
    assert ValidityJudge(_world(), ValidityConf(reference_min_prob=0.7)).min_prob == 0.7


def test_the_packaged_judge_loads_as_plain_data_and_names_random_views_of_the_default_box() -> None:
    # catches: a judge file that needs unpickling, another class order, or a judge that no longer matches
    # the renderer (it names 0.913 of one random default-box view of each of the 10,000 test images, and
    # 0.925 of the images unchanged: docs/results/worst_case/transform-world.md)
    judge = load_target(REFERENCE_JUDGE)  # weights_only, like every target.pt
    assert list(judge.class_names) == CLASS_NAMES and tuple(judge.input_shape) == (1, 28, 28)
    world = _world()
    z = world.instances("test")  # 300 held-out images
    s = world.random_conditions(len(z), 1, generator=torch.Generator().manual_seed(0))
    right = judge.predict_proba(world.render(z, s)).argmax(1) == z.labels
    assert right.float().mean() >= 0.87


def test_the_judge_is_in_the_check_only_inside_the_box_it_was_trained_on() -> None:
    # catches: a JUDGE_BOX wider than the views the packaged judge saw in training (it would judge views it never
    # learned), or a judge file swapped without its box
    trained = torch.load(REFERENCE_JUDGE, weights_only=True)["meta"]["config"]["factors"]
    assert {name: tuple(bounds) for name, bounds in trained.items()} == JUDGE_BOX
