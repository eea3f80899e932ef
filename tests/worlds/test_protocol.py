"""Factors, bounds and the target-fit check."""

from __future__ import annotations

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.worlds.protocol import (Factor, check_in_bounds, fit_target_to_world, configure_factors,
                                      factor_to_unit, unit_to_factor)
from advaudit.worlds.shapes import DEFAULT_FACTORS, ShapeWorld


def test_factor_bounds_low_above_high_is_refused() -> None:
    with pytest.raises(AdvauditError, match="low=5.0 > high=1.0"):
        Factor("x", 5.0, 1.0)
    with pytest.raises(AdvauditError, match="factor 'camera_elevation' has low=30.0 > high=-30.0"):
        configure_factors(DEFAULT_FACTORS, {"camera_elevation": [30, -30]})


def test_overrides_narrow_fix_and_reject_unknown_names() -> None:
    factors = configure_factors(DEFAULT_FACTORS, {"camera_elevation": [-30, 30], "sun_energy": 2.5})
    by_name = {f.name: f for f in factors}
    assert (by_name["camera_elevation"].low, by_name["camera_elevation"].high) == (-30, 30)
    assert by_name["sun_energy"].fixed and by_name["sun_energy"].low == 2.5
    with pytest.raises(AdvauditError, match="unknown factor 'zoom'"):
        configure_factors(DEFAULT_FACTORS, {"zoom": [1, 2]})


def test_unit_round_trip_and_out_of_bounds_refusal() -> None:
    u = torch.rand(4, 3, len(DEFAULT_FACTORS))
    s = unit_to_factor(u, DEFAULT_FACTORS)
    assert torch.allclose(factor_to_unit(s, DEFAULT_FACTORS), u, atol=1e-5)
    check_in_bounds(s, DEFAULT_FACTORS)
    s[0, 0, 8] = 7.0  # camera distance above 3.5 (the default upper bound)
    with pytest.raises(AdvauditError, match=r"factor 'camera_distance' has values in \[.*7.*outside its bounds \[1.5, 3.5\]"):
        check_in_bounds(s, DEFAULT_FACTORS)
    assert float(unit_to_factor(torch.full((1, 12), 2.0), DEFAULT_FACTORS)[0, 8]) == 3.5  # unit cube is clipped


class _Target:
    def __init__(self, shape: tuple[int, ...], names: list[str]) -> None:
        self.input_shape, self.meta = shape, {"class_names": list(names)}

    @property
    def class_names(self) -> list[str]:
        return self.meta["class_names"]


def test_fit_target_to_world_names_both_sides() -> None:
    world = ShapeWorld(image_size=32)
    fitted = fit_target_to_world(world, _Target((3, 32, 32), list(reversed(world.class_names))))
    assert fitted.class_names == world.class_names  # paired by name, outputs in the world's order
    assert fitted.output_columns.tolist() == list(reversed(range(10)))
    with pytest.raises(AdvauditError, match=r"renders images of shape \[3, 32, 32\] but the target takes \[1, 28, 28\]"):
        fit_target_to_world(world, _Target((1, 28, 28), world.class_names))
    with pytest.raises(AdvauditError, match="the target predicts no class 'bowl' of the world"):
        fit_target_to_world(world, _Target((3, 32, 32), world.class_names[:2]))
