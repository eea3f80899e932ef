"""Error-search metrics: SDR (errors found / errors expected from confidence), errors found,
spread (mean distance from each pool item to its nearest queried item)."""

from __future__ import annotations

import torch
from torch import Tensor


def sdr_curve(is_error: Tensor, confidence: Tensor) -> Tensor:
    """SDR after each query: ``cumsum(errors) / cumsum(1 - p)``; inputs and output ``[R, B]``."""
    return is_error.double().cumsum(-1) / (1 - confidence.double()).cumsum(-1).clamp_min(1e-12)


def spread_curve(features: Tensor, queried: Tensor) -> Tensor:
    """Spread after each query ``[B]`` for one pool: ``features`` ``[P, D]``, ``queried`` ``[B]`` indices."""
    distances = torch.cdist(features.float(), features[queried].float())  # [P, B]
    return distances.cummin(1).values.mean(0)


def mean_and_ci(values: Tensor, z: float = 1.96) -> tuple[Tensor, Tensor]:
    """Mean over replications ``[R, B] -> [B]`` and the half-width of its normal 95% interval."""
    mean = values.double().mean(0)
    half = z * values.double().std(0) / max(1, values.shape[0]) ** 0.5
    return mean, half
