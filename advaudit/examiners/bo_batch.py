"""Several GP-UCB proposals from one posterior: GP-BUCB's hallucinated observations, on a candidate pool.

With ``q > 1`` BO proposes ``q`` points per step from one screen and one refinement (Desautels,
Krause and Burdick, "Parallelizing exploration-exploitation tradeoffs in Gaussian process bandit
optimization", JMLR 2014). The first point is the UCB's maximiser, as with ``q = 1``. Each further
point maximises the UCB after the points already chosen were *hallucinated* as observed with their
posterior mean: the mean does not change, and the variance shrinks by a rank-one update,

    var'(c) = var(c) - cov(f, c)^2 / (var(f) + noise),   cov(f, c) = k(f, c) - v_f^T v_c - sum_j w_j(f) w_j(c)

with ``v = L^-1 k(X, .)`` (what the screen computed already) and ``w_j`` the rows the hallucinated
points ``j`` add to ``L^-1 k``. Each pick costs O(n P) for a pool of P candidates (the screen's
points and the refined starts), not the O(n^2 P) of a new product with ``L^-1``, so ``q`` proposals
cost about one acquisition.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor


def hallucinated_picks(mu: Tensor, var: Tensor, v: Tensor, pool: Tensor, noise: Tensor, beta: Tensor, q: int,
                       kernel: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """``[N, q]`` indices into the pool of GP-BUCB's ``q`` picks per instance.

    Args:
        mu, var: posterior mean and variance ``[N, P]`` at the pool (standardised outcome space).
        v: ``L^-1 k(X, pool)`` ``[N, n, P]``.
        pool: the candidates ``[N, P, d]``.
        noise: the likelihood's noise ``[N]``; beta: the UCB weight ``[N, 1]``.
        kernel: the GP's prior covariance, ``kernel(a [N, m, d], b [N, P, d]) -> [N, m, P]``.

    A candidate is picked at most once; the first pick maximises the UCB itself.
    """
    n_instances, size = mu.shape
    rows = torch.arange(n_instances, device=mu.device)
    root_beta, noise = beta.to(mu).sqrt(), noise.to(mu)
    var = var.clone()
    taken = torch.zeros(n_instances, size, dtype=torch.bool, device=mu.device)
    extra: list[Tensor] = []   # w_j [N, P]: the hallucinated points' rows of L^-1 k
    picks = []
    for j in range(min(q, size)):
        ucb = (mu + root_beta * var.clamp_min(1e-12).sqrt()).masked_fill(taken, -torch.inf)
        pick = ucb.argmax(1)
        picks.append(pick)
        taken[rows, pick] = True
        if j + 1 == q:
            break
        cov = kernel(pool[rows, pick][:, None], pool).squeeze(1)                         # [N, P]
        cov = cov - (v[rows, :, pick].unsqueeze(1) @ v).squeeze(1)
        for w in extra:
            cov = cov - w[rows, pick][:, None] * w
        w = cov / (var[rows, pick].clamp_min(0) + noise).sqrt()[:, None]
        var = var - w * w
        extra.append(w)
    return torch.stack(picks, 1)
