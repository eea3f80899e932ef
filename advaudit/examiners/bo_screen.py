"""BO's Sobol screen with its posterior products grown one observation at a time.

The screen scores ``P`` Sobol points (shared by the N instances) by UCB at every step; each score needs
``v = L^-1 k(X, points)``, an ``[N, n, n] @ [N, n, P]`` product: O(n^2 P) per step, a quarter of BO's time
at 55 x 500. Between two hyperparameter refits the factor ``L^-1`` only grows by one row per observation
(:class:`~advaudit.examiners.gp_factor.GrowingFactor`), and the rows it had do not change; so with the
Sobol points held fixed between refits, ``v`` grows by one row too: ``v_i = (L^-1)_i k(X_{:i+1}, points)``,
O(n P) per step. A refit draws a new Sobol set (its seed kept in the examiner's state) and computes
``v`` in one product. The screen's UCB is then ``mu = m + alpha^T v`` and ``sigma^2 = 1 - |v|^2``, as in
:meth:`advaudit.examiners.bo.BOExaminer._ucb` (equal to its values up to float rounding).

Rows are always appended one at a time, so a resumed examiner (factor replayed to the last refit,
then grown) rebuilds ``v`` bit for bit.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.quasirandom import SobolEngine

from advaudit.examiners.gp_factor import GrowingFactor


class FixedScreen:
    """``P`` Sobol points in ``[0, 1]^d`` and ``v = L^-1 k(X, points)`` ``[N, n, P]``, grown with the factor.

    Args:
        n_points: ``P``, the Sobol points screened per step.
        n_dims: ``d``.
    """

    def __init__(self, n_points: int, n_dims: int) -> None:
        self.n_points, self.n_dims = int(n_points), int(n_dims)
        self.n = 0
        self.points: Tensor | None = None

    def reset(self, factor: GrowingFactor, seed: int) -> None:
        """New Sobol points (scrambled with ``seed``) and ``v`` for the factor's ``n`` points in one product."""
        X, inverse, _, _ = factor.context()
        N, n = X.shape[0], X.shape[1]
        points = SobolEngine(self.n_dims, scramble=True, seed=int(seed)).draw(self.n_points)
        self.points = points.to(X.device, X.dtype).expand(N, -1, -1)                     # [N, P, d]
        capacity = n + max(64, n // 4)  # headroom, as the factor's buffers
        self._K = torch.zeros(N, capacity, self.n_points, dtype=X.dtype, device=X.device)
        self._V = torch.zeros_like(self._K)
        self._K[:, :n] = factor.kernel(X, self.points)
        self._V[:, :n] = inverse @ self._K[:, :n]
        self.n = n

    def extend(self, factor: GrowingFactor) -> None:
        """Append the rows of ``v`` for the factor's points beyond the first ``n`` (one at a time)."""
        X, inverse, _, _ = factor.context()
        if X.shape[1] > self._K.shape[1]:
            extra = X.shape[1] - self._K.shape[1] + max(64, X.shape[1] // 4)
            pad = torch.zeros(X.shape[0], extra, self.n_points, dtype=X.dtype, device=X.device)
            self._K, self._V = torch.cat([self._K, pad], 1), torch.cat([self._V, pad.clone()], 1)
        for i in range(self.n, X.shape[1]):
            self._K[:, i] = factor.kernel(X[:, i:i + 1], self.points).squeeze(1)
            self._V[:, i] = (inverse[:, i:i + 1, :i + 1] @ self._K[:, :i + 1]).squeeze(1)
            self.n = i + 1

    def ucb(self, factor: GrowingFactor, sqrt_beta: Tensor) -> tuple[Tensor, Tensor]:
        """The Sobol points ``[N, P, d]`` and their UCB ``[N, P]`` (standardised outcome space), after
        growing ``v`` to the factor's points; ``sqrt_beta`` ``[N, 1]``."""
        self.extend(factor)
        _, _, alpha, mean = factor.context()
        V = self._V[:, : self.n]
        mu = mean[:, None] + (alpha.unsqueeze(1) @ V).squeeze(1)
        var = (1 - (V * V).sum(1)).clamp_min(1e-12)
        return self.points, mu + sqrt_beta.to(V) * var.sqrt()
