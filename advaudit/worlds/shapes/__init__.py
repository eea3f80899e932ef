"""ShapeWorld: a fast batched analytic renderer of everyday objects under 12 rendering factors."""

from advaudit.worlds.shapes.world import DEFAULT_FACTORS, ShapeWorld

__all__ = ["ShapeWorld", "DEFAULT_FACTORS"]
