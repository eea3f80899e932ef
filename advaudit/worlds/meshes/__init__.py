"""MeshWorld: real meshes (ShapeNetCore, ModelNet, any mesh folder) rendered by Mitsuba 3 under
the examiner paper's Table-1 factors."""

from advaudit.worlds.meshes.world import MeshWorld

__all__ = ["MeshWorld"]
