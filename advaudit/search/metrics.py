"""Error-search measures of the adversarial-distance paper (its Figs. 2, 3, 5, 6, 7), per query count.

- SDR (Eq. 5 / Maurer & Bennette): errors found divided by the errors the confidences predict,
  ``SDR_k = sum_{j<=k} e_j / sum_{j<=k} (1 - c_j)``. Higher is better.
- spread (Eq. 6): ``spread = sum_{x in X} min_{q in Q} dist(x, q) / |X|``, the mean distance from
  every pool item to its nearest queried item. LOWER is better: the queries cover the pool.
- Bansal & Weld's coverage utility (Eq. 1): :func:`advaudit.search.coverage.coverage_utility_curve`.
- errors found (Lakkaraju's utility for imagery, Fig. 6): ``sum_{j<=k} e_j``.
- confidence of what was queried (Fig. 7): ``c_j`` of each query.
- what a score knows about errors beyond confidence: :func:`error_auc_within_confidence`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


def sdr_curve(is_error: Tensor, confidence: Tensor) -> Tensor:
    """SDR after each query: ``cumsum(errors) / cumsum(1 - p)``; inputs and output ``[R, B]``."""
    return is_error.double().cumsum(-1) / (1 - confidence.double()).cumsum(-1).clamp_min(1e-12)


def spread_curve(features: Tensor, queried: Tensor) -> Tensor:
    """Spread (Eq. 6, lower is better) after each query: ``[..., B]``.

    ``features`` ``[..., P, D]`` (one pool, or ``R`` pools batched), ``queried`` ``[..., B]`` positions.
    """
    picked = features.gather(-2, queried[..., None].expand(*queried.shape, features.shape[-1]))
    distances = torch.cdist(features.float(), picked.float())  # [..., P, B]
    return distances.cummin(-1).values.mean(-2)


def pool_mean_and_sd(values: Tensor) -> tuple[Tensor, Tensor]:
    """Mean over the pools of one run ``[R, B] -> [B]`` and the pool-to-pool standard deviation.

    Pools drawn from one evaluation set overlap, so this is no confidence interval: intervals come
    from independent replications (:func:`advaudit.audits.error_search_report.aggregate_replications`).
    """
    values = values.double()
    return values.mean(0), values.std(0) if values.shape[0] > 1 else torch.zeros(values.shape[1:], dtype=torch.float64)


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


def error_auc(score: np.ndarray, is_error: np.ndarray) -> float:
    """ROC AUC of ``score`` ``[n]`` for ``is_error`` ``[n]`` bool: the probability that a random error
    scores above a random correct item, ties counting 1/2 (0.5 = no information; NaN without both)."""
    from scipy.stats import rankdata  # scipy.stats is slow to import; only this statistic needs it

    positive = np.asarray(is_error, dtype=bool)
    pos, neg = int(positive.sum()), int((~positive).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    ranks = rankdata(np.asarray(score, dtype=np.float64))
    return float((ranks[positive].sum() - pos * (pos + 1) / 2) / (pos * neg))


def error_auc_within_confidence(score: np.ndarray, is_error: np.ndarray, confidence: np.ndarray,
                                bins: int = 5) -> float:
    """:func:`error_auc` inside each confidence quantile bin, averaged with weights = error x correct pairs
    per bin: what ``score`` knows about errors *beyond* the confidence, which SDR > random requires
    (a function of confidence alone scores about 0.5 here however well it ranks errors overall)."""
    positive = np.asarray(is_error, dtype=bool)
    confidence = np.asarray(confidence, dtype=np.float64)
    edges = np.quantile(confidence, np.linspace(0, 1, bins + 1))
    which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    total, weight = 0.0, 0
    for b in range(bins):
        inside = which == b
        pairs = int(positive[inside].sum()) * int((~positive[inside]).sum())
        if pairs:
            total += error_auc(np.asarray(score)[inside], positive[inside]) * pairs
            weight += pairs
    return total / weight if weight else float("nan")
