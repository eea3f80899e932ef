"""Parametric input spaces S: the World protocol, ShapeWorld, TransformWorld and MeshWorld
(``advaudit.worlds.meshes``: real meshes rendered by Mitsuba 3; imported on use, like the others,
through ``build_world``)."""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate

from advaudit.worlds.protocol import (Factor, Instances, World, fit_target_to_world, factor_to_unit,
                                      unit_to_factor)

__all__ = ["Factor", "Instances", "World", "build_world", "fit_target_to_world", "factor_to_unit",
           "unit_to_factor"]


def build_world(world_cfg: Any) -> World:
    """Instantiate ``cfg.world`` (a config with ``_target_``)."""
    return instantiate(world_cfg, _recursive_=False)
