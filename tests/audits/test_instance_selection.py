"""Which instances an examination looks at: the same for every checkpoint by default (a paired design)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advaudit.audits.instance_selection import select_instances, stratified
from advaudit.errors import AdvauditError
from advaudit.worlds.shapes import ShapeWorld
from tests.conftest import worst_case_overrides


class Preferences:
    """A stand-in checkpoint: its true-class probability follows a fixed random score per pixel pattern."""

    def __init__(self, seed: int, classes: int) -> None:
        self.weights = torch.randn(3 * 16 * 16, classes, generator=torch.Generator().manual_seed(seed))

    def predict_proba(self, x: torch.Tensor, calibrated: bool = False) -> torch.Tensor:
        return torch.softmax(x.reshape(len(x), -1) @ self.weights, 1)


def test_stratified_selection_is_the_same_for_every_checkpoint_and_best_per_class_is_not() -> None:
    world = ShapeWorld(image_size=16, instances_per_class={"train": 1, "val": 6, "test": 1}, classes=["mug", "chair", "lamp"])
    a, b = Preferences(1, 3), Preferences(2, 3)
    same = [select_instances(world, t, "val", "stratified", None, 3, seed=7).ids.tolist() for t in (a, b)]
    assert same[0] == same[1]
    labels = world.instances("val").labels
    chosen = select_instances(world, a, "val", "stratified", None, 3, seed=7)
    assert sorted(chosen.labels.tolist()) == [0, 1, 2]  # one per class
    assert select_instances(world, a, "val", "stratified", None, 3, seed=8).ids.tolist() != same[0]  # the seed draws
    best = [select_instances(world, t, "val", "best_per_class", None, 3, seed=7).ids.tolist() for t in (a, b)]
    assert best[0] != best[1]  # per checkpoint: these two prefer different instances
    five = select_instances(world, a, "val", "stratified", 5, 3, seed=7)
    assert sorted(torch.bincount(five.labels, minlength=3).tolist()) == [1, 2, 2]  # spread over the classes in turn
    assert len(labels) == 18


def test_stratified_takes_each_class_in_turn_and_refuses_more_than_the_split() -> None:
    labels = torch.tensor([0, 0, 0, 1, 2, 2])
    index = stratified(labels, 5, torch.Generator().manual_seed(0))
    assert torch.bincount(labels[index], minlength=3).tolist() == [2, 1, 2]
    assert len(stratified(labels, 6, torch.Generator().manual_seed(0)).unique()) == 6
    with pytest.raises(AdvauditError, match="only 6 instances"):
        stratified(labels, 7, torch.Generator().manual_seed(0), "val")


def test_the_default_examination_is_paired_and_says_so(make_cfg, tiny_shapes_target: Path, tmp_path: Path) -> None:
    from advaudit.tasks import examine

    result = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target)))
    assert result["instance_selection"]["selection"] == "stratified"
    assert result["instance_selection"]["design"] == "paired"
    assert "paired design" in Path(result["report"]).read_text()
    paper = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, "experiment=examiner/table2",
                                                             "world.image_size=16", "audit.budget=4",
                                                             "audit.report_budgets=[0,4]",
                                                             f"paths.output_dir={tmp_path / 'paper'}")))
    assert paper["instance_selection"]["design"] == "per checkpoint"  # the reproductions keep the paper's choice
