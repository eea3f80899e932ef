"""A comparison rebuilds the world a run searched from its result.json, not from today's default box."""

from __future__ import annotations

import copy
from pathlib import Path

from advaudit.compare.records import read_run, with_recorded_box
from advaudit.worlds import build_world
from tests.conftest import worst_case_overrides


def test_a_run_records_its_box_and_the_comparison_rebuilds_it(make_cfg, tiny_shapes_target: Path) -> None:
    from advaudit.tasks import examine

    result = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, "world.factors={camera_roll:[0,90]}")))
    box = result["world_box"]
    assert box["camera_roll"] == [0.0, 90.0] and len(box) > 1   # its own override and every default bound
    record = read_run(Path(result["report"]).parent)
    rebuilt = build_world(record.config["world"])
    assert {f.name: [f.low, f.high] for f in rebuilt.factors} == box


def test_a_recorded_box_fills_a_run_that_left_the_box_to_the_defaults() -> None:
    """A run examined under an older default box (blur up to 1 px) keeps it when the default changes;
    the run's own settings win over the recorded bounds; a world without a factors setting is left alone."""
    config = {"world": {"_target_": "advaudit.worlds.transforms.TransformWorld", "factors": None}}
    with_recorded_box(config, {"blur": [0.0, 1.0], "rotation": [-30.0, 30.0]})
    assert config["world"]["factors"] == {"blur": [0.0, 1.0], "rotation": [-30.0, 30.0]}
    own = {"world": {"factors": {"rotation": [-10, 10]}}}
    with_recorded_box(own, {"blur": [0.0, 1.0], "rotation": [-30.0, 30.0]})
    assert own["world"]["factors"] == {"blur": [0.0, 1.0], "rotation": [-10, 10]}
    custom = {"world": {"_target_": "my.World", "size": 3}}
    with_recorded_box(after := copy.deepcopy(custom), {"blur": [0.0, 1.0]})
    assert after == custom
