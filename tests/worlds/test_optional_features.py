"""A world's optional features are declared in the protocol (with defaults) and read through ``offered``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from advaudit.worlds.protocol import DEFAULT_MIN_PROB, OPTIONAL, Factor, offered
from advaudit.worlds.shapes import ShapeWorld

PACKAGE = Path(__file__).resolve().parents[2] / "advaudit"
#: models/ sits below worlds/ in the layers (tests/test_layers.py), so it cannot import ``offered``: training a
#: generator through a world's renders checks for ``scenes_from_units`` itself, naming the fix
BELOW_WORLDS = ("advaudit/models/generators/rendered_generator.py",)


class Bare:
    """A world with only the protocol's members."""

    factors = [Factor("x", 0.0, 1.0)]
    class_names = ["a", "b"]
    image_shape = (1, 8, 8)


def test_a_world_without_a_feature_has_its_declared_default() -> None:
    assert offered(Bare(), "device") == "cpu" and offered(Bare(), "render_checked") is None
    assert offered(Bare(), "reference_min_prob") == DEFAULT_MIN_PROB and offered(Bare(), "checks_object_height") is False
    world = ShapeWorld(image_size=16, instances_per_class={"train": 1, "val": 1, "test": 1})
    assert offered(world, "checks_object_height") is True and offered(world, "with_image_size")(24).image_size == 24
    with pytest.raises(KeyError, match="not a world feature declared"):
        offered(world, "render_fast")


def test_every_feature_read_is_declared_and_none_is_discovered() -> None:
    """Every ``offered(world, "<name>")`` names a declared feature; no module asks a world with ``hasattr``/``getattr``."""
    read, discovered = set(), []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2):
                continue
            first, name = node.args[0], node.args[1]
            if node.func.id == "offered" and isinstance(name, ast.Constant):
                read.add(name.value)
            elif (node.func.id in ("hasattr", "getattr") and isinstance(name, ast.Constant) and name.value in OPTIONAL
                  and "world" in ast.unparse(first)):
                if str(path.relative_to(PACKAGE.parent)) not in BELOW_WORLDS:
                    discovered.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert read <= set(OPTIONAL) and {"render_checked", "subsample", "reference_judge", "with_image_size"} <= read
    assert not discovered, discovered
