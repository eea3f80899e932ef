"""Range rules: the one-line problem of each kind of rule, on known values."""

from __future__ import annotations

from omegaconf import OmegaConf

from advaudit.config.ranges import Rule, key_rule_problems, range_problems, rules_of
from advaudit.config.rules import CHANNELS, IMAGE_SIZE, PER_CLASS, TEST_FRACTION, VAL_FRACTION
from advaudit.data.settings import DatasetConf


def test_bounds_choices_and_learning_rates() -> None:
    assert Rule(low=1, integer=True).problems("a.n", 0) == ["a.n=0 must be >= 1; the nearest valid value is 1"]
    assert Rule(low=1, integer=True).problems("a.n", 2.0) == ["a.n=2.0 must be a whole number"]
    assert Rule(low=1, integer=True).problems("a.n", None) == []
    assert Rule(low=1, integer=True, required=True).problems("a.n", None) == ["a.n=None must be a number"]
    assert VAL_FRACTION.problems("d.val_fraction", 1.0) == ["d.val_fraction=1.0 must be in [0, 1)"]
    assert VAL_FRACTION.problems("d.val_fraction", 0.0) == []
    assert TEST_FRACTION.problems("d.test_fraction", 0.0) == ["d.test_fraction=0.0 must be in (0, 1)"]
    assert IMAGE_SIZE.problems("w.image_size", 513) == ["w.image_size=513; use 8..512 pixels"]
    assert IMAGE_SIZE.problems("w.image_size", 512) == []
    assert CHANNELS.problems("d.channels", 2) == ["d.channels=2; use 1 (grayscale) or 3 (RGB)"]
    assert CHANNELS.problems("d.channels", True) == ["d.channels=True; use 1 (grayscale) or 3 (RGB)"]
    assert CHANNELS.problems("d.channels", 3) == []
    assert Rule(choices=("linf", "l2")).problems("m.norm", "l3") == ["m.norm='l3'; use linf or l2"]
    lr = Rule(learning_rate=True)
    assert lr.problems("m.lr", 0) == ["m.lr=0 must be a positive number (e.g. m.lr=0.001)"]
    assert lr.problems("m.lr", 3) == [] and lr.warning("m.lr", 3) is not None and lr.warning("m.lr", 0.1) is None


def test_one_count_or_a_count_per_split() -> None:
    assert PER_CLASS.problems("w.instances_per_class", 0) == ["w.instances_per_class=0 must be >= 1"]
    assert PER_CLASS.problems("w.instances_per_class", {"train": 5, "val": 0, "test": None}) == [
        "w.instances_per_class.val=0 must be >= 1"]
    limit = rules_of(DatasetConf)["limit"]
    assert limit.problems("d.limit", {"trian": 3, "val": 0, "test": None}) == [
        "d.limit names split 'trian'; use train, val or test", "d.limit.val=0 must be >= 1 (or null for all)"]


def test_untyped_blocks_take_the_given_schema_and_key_rules_hold_where_their_block_is() -> None:
    block = OmegaConf.create({"_target_": "my.DataModule", "batch_size": 0, "limit": {"test": 0}})
    assert range_problems(block, "audit.dataset") == []  # untyped: no rules of its own
    assert range_problems(block, "audit.dataset", schema=DatasetConf) == [
        "audit.dataset.batch_size=0 must be >= 1; the nearest valid value is 1",
        "audit.dataset.limit.test=0 must be >= 1 (or null for all)"]
    rules = {"model.adversarial.norm": Rule(choices=("linf", "l2"), required=True)}
    assert key_rule_problems(OmegaConf.create({"model": {"adversarial": None}}), rules) == []
    assert key_rule_problems(OmegaConf.create({"model": {"adversarial": {"eps": 0.1}}}), rules) == [
        "model.adversarial.norm=None; use linf or l2"]
