"""Measure an injected image feature on seeds and tests, to check automatically whether a failing
test moved that feature in the fault's direction (the paper judged this by eye)."""

from __future__ import annotations

from torch import Tensor

from advaudit.data.bias import image_statistic
from advaudit.errors import AdvauditError


def feature_value(x: Tensor, kind: str) -> Tensor:
    """``[B]`` strength of an injected feature in ``x`` ``[B, C, H, W]``: ``brightness`` = mean
    intensity; ``size`` = share of pixels above 0.1 (the object's area); ``patch`` = mean of the
    top-left square (1/5 of the side, :func:`advaudit.data.bias.add_image_feature`)."""
    if kind in ("brightness", "size"):
        return image_statistic(x, kind)
    if kind == "patch":
        side = max(2, x.shape[-1] // 5)
        return x[..., :side, :side].flatten(1).mean(1)
    raise AdvauditError(f"audit.fault_feature.kind={kind!r} is unknown; use brightness, size or patch")


def feature_shift(seeds: Tensor, tests: Tensor, kind: str, direction: float) -> Tensor:
    """``[B]`` change of the feature from seed to test, signed so that the fault's direction is positive."""
    return (feature_value(tests, kind) - feature_value(seeds, kind)) * direction

