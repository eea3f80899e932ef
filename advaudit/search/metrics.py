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


def _smallest_cumsum(values: Tensor, keep: Tensor, budget: int) -> Tensor:
    """``[R, budget + 1]``: sum of the j smallest ``values`` among ``keep`` items (inf if fewer exist)."""
    masked = values.double().masked_fill(~keep, torch.inf)
    smallest = masked.sort(1).values[:, :budget]
    if smallest.shape[1] < budget:
        pad = torch.full((len(values), budget - smallest.shape[1]), torch.inf, dtype=torch.float64)
        smallest = torch.cat([smallest, pad], 1)
    zero = torch.zeros(len(values), 1, dtype=torch.float64)
    return torch.cat([zero, smallest.cumsum(1)], 1)


def oracle_ceiling(is_error: Tensor, confidence: Tensor, budget: int) -> Tensor:
    """The best SDR any query set of each size 1..B could reach on each pool: ``[R, B]``.

    Exact: a set with ``j`` errors and ``k - j`` non-errors has the smallest denominator when both
    parts are the items of highest confidence, so the ceiling at ``k`` is
    ``max_j j / (E_j + N_{k-j})`` over the sorted cumulative sums of ``1 - p``.
    Inputs ``[R, P]`` (bool errors, confidences).
    """
    slack = 1 - confidence.double()
    errors = _smallest_cumsum(slack, is_error, budget)        # [R, B+1]
    others = _smallest_cumsum(slack, ~is_error, budget)       # [R, B+1]
    k = torch.arange(1, budget + 1)[:, None]                  # [B, 1]
    j = torch.arange(budget + 1)[None, :]                     # [1, B+1]
    valid = j <= k
    rest = (k - j).clamp(0, budget)                           # [B, B+1]
    denominator = errors[:, None, :].expand(-1, budget, -1) + others[:, rest]
    ratio = j.double() / denominator.clamp_min(1e-12)
    ratio = torch.where(valid & torch.isfinite(denominator), ratio, torch.zeros_like(ratio))
    return ratio.amax(2)
