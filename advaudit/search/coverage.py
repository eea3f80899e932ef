"""Bansal & Weld's (2018) coverage utility, as the adversarial-distance paper computes it.

Eq. (1) of the adversarial-distance paper: ``U = sum_{x in X} c_x * Cover(x | Q)``, where
``Cover(x | Q) = max_{q in Q, q an error} sim(x, q)``. In Bansal & Weld's code (shipped with the
adversarial-distance paper's experiments, ``unkunk_utility.SubmodUtilityModel``) the similarity is
a Gaussian of the Euclidean distance in the derived feature space after dividing every distance
by the largest distance of the evaluation set: ``sim(x, q) = exp(-(d(x, q) / d_max)^2 / var)``
with ``var = 0.001`` in the paper's runs. An error therefore covers itself fully (its own ``c``)
and near-duplicates a little; ``U`` grows with the confidence of the errors found.

Everything is batched over ``R`` pools; features ``[R, P, D]``.
"""

from __future__ import annotations

import torch
from torch import Tensor

PAPER_VARIANCE = 0.001


def pool_diameter(features: Tensor) -> Tensor:
    """``[R]``: the largest pairwise Euclidean distance within each pool (``d_max`` of the utility)."""
    return torch.stack([torch.cdist(pool, pool).max() for pool in features.float()]).clamp_min(1e-12)


def similarity(distance: Tensor, diameter: Tensor, variance: float = PAPER_VARIANCE) -> Tensor:
    """``exp(-(d / d_max)^2 / var)`` for distances ``[R, ...]`` and diameters ``[R]``."""
    scale = diameter.reshape(-1, *([1] * (distance.dim() - 1)))
    return torch.exp(-(distance / scale) ** 2 / variance)


def coverage_utility_curve(features: Tensor, confidence: Tensor, positions: Tensor, answers: Tensor,
                           variance: float = PAPER_VARIANCE, diameter: Tensor | None = None) -> Tensor:
    """Bansal & Weld's utility after each query: ``[R, B]``.

    ``features`` ``[R, P, D]``, ``confidence`` ``[R, P]`` (``c_x``), ``positions`` ``[R, B]`` queried
    items in query order, ``answers`` ``[R, B]`` bool (error or not). Exact: every pool item counts.
    """
    diameter = pool_diameter(features) if diameter is None else diameter
    queried = features.gather(1, positions[..., None].expand(-1, -1, features.shape[2]))   # [R, B, D]
    cover = similarity(torch.cdist(features.float(), queried.float()), diameter, variance)  # [R, P, B]
    cover = (cover * answers[:, None, :].float()).cummax(2).values                          # Cover(x | Q_k)
    return (confidence.double()[..., None] * cover.double()).sum(1)


class NeighbourCoverage:
    """Incremental ``Cover(x | Q)`` over ``R`` pools with each item's ``m`` nearest neighbours.

    Bansal & Weld's greedy needs, for every candidate ``i``, the utility if ``i`` were an error:
    ``U(Q + i) = U(Q) + sum_x c_x (sim(x, i) - Cover(x))_+``. With the paper's narrow kernel only
    an item's nearest neighbours contribute, so the sum runs over them (``m = P`` is exact).
    """

    def __init__(self, features: Tensor, confidence: Tensor, neighbours: int = 64,
                 variance: float = PAPER_VARIANCE) -> None:
        r, p, _ = features.shape
        m = min(neighbours, p)
        index, sims = [], []
        for pool in features.float():                         # [P, P] per pool keeps memory at P^2
            distance = torch.cdist(pool, pool)
            near, where = distance.topk(m, dim=1, largest=False)
            index.append(where)
            sims.append(similarity(near[None], distance.max().clamp_min(1e-12)[None], variance)[0])
        self.index = torch.stack(index)                       # [R, P, m] (each item first: itself)
        self.sim = torch.stack(sims)                          # [R, P, m] float32 (5x faster than float64 here)
        self.weight = confidence.float().gather(1, self.index.flatten(1)).view(r, p, m)  # c of each neighbour
        self.confidence = confidence.float()
        self.cover = torch.zeros(r, p)
        self.rows = torch.arange(r)

    def utility(self) -> Tensor:
        """``[R]`` current ``U(Q)`` (up to the neighbour truncation)."""
        return (self.cover.double() * self.confidence.double()).sum(1)

    def gain_if_error(self) -> Tensor:
        """``[R, P]``: ``U(Q + i) - U(Q)`` if item ``i`` turned out to be an error."""
        current = self.cover.gather(1, self.index.flatten(1)).view_as(self.sim)
        return ((self.sim - current).clamp_min(0) * self.weight).sum(2).double()

    def add_errors(self, positions: Tensor, is_error: Tensor) -> None:
        """Items ``positions`` ``[R]`` were answered; those with ``is_error`` ``[R]`` now cover their neighbours."""
        sims = self.sim[self.rows, positions] * is_error.float()[:, None]      # [R, m]
        self.cover.scatter_reduce_(1, self.index[self.rows, positions], sims, reduce="amax")
