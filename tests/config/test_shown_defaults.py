"""Every built-in option's YAML shows every setting: the keys it sets, then a block with the others at the
defaults its settings dataclass gives them (:mod:`tests.config.shown_defaults`)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from tests.config.shown_defaults import CONF_DIR, HEADER, _composed, _own_text, expected_text, options, shown_values

OPTIONS = options()


def test_the_options_of_every_part_group_are_found() -> None:
    found = {path.relative_to(CONF_DIR).as_posix() for path in OPTIONS}
    assert {"audit/worst_case.yaml", "examiner/bo.yaml", "world/shapes.yaml", "search/method/gad.yaml",
            "dataset/fashion_mnist.yaml", "model/cnn.yaml"} <= found


@pytest.mark.parametrize("path", OPTIONS, ids=lambda p: p.relative_to(CONF_DIR).as_posix())
def test_each_option_shows_its_settings_as_its_dataclass_gives_them(path) -> None:
    assert path.read_text() == expected_text(path), (
        f"{path.relative_to(CONF_DIR)} does not show the settings its dataclass gives; rewrite the blocks with "
        "PYTHONPATH=$PWD python -m tests.config.shown_defaults")


@pytest.mark.parametrize("path", OPTIONS, ids=lambda p: p.relative_to(CONF_DIR).as_posix())
def test_the_file_and_its_block_together_are_the_option(path) -> None:
    """Round trip: the file's own keys plus what its block shows compose to exactly the option's value."""
    composed = OmegaConf.to_container(_composed(path)[0], resolve=False, throw_on_missing=False, enum_to_str=True)
    own = OmegaConf.to_container(OmegaConf.create(_own_text(path)), resolve=False)
    own.pop("defaults", None)
    together = OmegaConf.to_container(OmegaConf.merge(OmegaConf.create(shown_values(path)), own), resolve=False)
    assert together == composed
    assert (HEADER in path.read_text()) == bool(shown_values(path))
