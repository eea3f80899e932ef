"""validation's world rules: instances per class as advaudit's {split: count} or one count for a world of the user's own."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from advaudit.config.validation import Checks, Context
from advaudit.registry import schema_of
from advaudit.worlds.settings import WorldRulesConf


@pytest.mark.parametrize("counts, problems", [
    ({"train": 5, "val": 2, "test": 2}, []),
    ({"train": 5, "val": 0, "test": 2}, ["world.instances_per_class.val=0 must be >= 1"]),
    (7, []),
    (0, ["world.instances_per_class=0 must be >= 1"]),
    (None, []),
])
def test_instances_per_class_as_a_mapping_or_one_count(counts, problems) -> None:
    checks = Checks()
    world = OmegaConf.create({"_target_": "my_pkg.World", "instances_per_class": counts})
    Context(OmegaConf.create({"world": world}), checks, schema_of).check_part("world", world, "world", WorldRulesConf)
    assert checks.problems == problems
