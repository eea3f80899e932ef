"""The Examiner protocol: one independent black-box optimiser per instance, batched over all N.

Examiners work in the unit cube ``[0, 1]^C`` and *maximise* the loss they are told (higher =
worse for the model). Dimensions marked ``periodic`` (the world's circles, see
:attr:`advaudit.worlds.protocol.Factor.periodic`) are searched as circles: 0 and 1 are one point,
a step past 1 comes back in at 0 (:func:`keep_in_space`), and distances are taken around the circle. Budgets are counted in queries (model evaluations): an examiner that asks
``q`` candidates per step spends ``q`` queries per instance per step.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import Tensor

from advaudit.errors import require


class Examiner(Protocol):
    n_instances: int
    n_dims: int
    q: int

    def ask(self) -> Tensor:
        """Candidates ``[N, q, C]`` in the unit cube."""
        ...

    def tell(self, s: Tensor, loss: Tensor) -> None:
        """Observe ``loss`` ``[N, q]`` (higher = worse for the model) at the asked ``s`` ``[N, q, C]``."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Plain data + tensors, loadable with ``weights_only=True``."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        ...


def periodic_dims(periodic: Any, n_dims: int) -> Tensor:
    """``[n_dims]`` bool mask from ``periodic`` (None: no circles; else one flag per searched dim)."""
    if periodic is None:
        return torch.zeros(n_dims, dtype=torch.bool)
    mask = torch.as_tensor([bool(p) for p in periodic], dtype=torch.bool)
    require(mask.numel() == n_dims, f"periodic has {mask.numel()} flags for {n_dims} searched dims")
    return mask


def keep_in_space(u: Tensor, periodic: Tensor) -> Tensor:
    """Bring points ``[..., C]`` back into the search space: periodic dims wrap into [0, 1) (1.1 -> 0.1,
    -0.05 -> 0.95), the others are clipped into [0, 1]."""
    if not bool(periodic.any()):
        return u.clamp(0, 1)
    mask = periodic.to(u.device)
    return torch.where(mask, torch.remainder(u, 1.0), u.clamp(0, 1))


def circular_difference(a: Tensor, b: Tensor, periodic: Tensor) -> Tensor:
    """``|a - b|`` per dim ``[..., C]``, around the circle on periodic dims (at most 0.5)."""
    diff = (a - b).abs()
    return torch.where(periodic.to(diff.device), torch.minimum(diff, 1 - diff), diff)


class HistoryMixin:
    """Keeps every observation ``X`` ``[N, n, C]`` / ``Y`` ``[N, n]`` (float64) and checks shapes."""

    n_instances: int
    n_dims: int
    q: int

    def _init_history(self, n_instances: int, n_dims: int, q: int) -> None:
        require(n_instances >= 1, f"an examiner needs at least one instance, got {n_instances}")
        require(n_dims >= 1, "all factors are fixed: nothing to search; free at least one factor")
        require(q >= 1, f"q={q} candidates per step must be >= 1")
        self.n_instances, self.n_dims, self.q = int(n_instances), int(n_dims), int(q)
        self.X = torch.zeros(n_instances, 0, n_dims, dtype=torch.float64)
        self.Y = torch.zeros(n_instances, 0, dtype=torch.float64)

    def _record(self, s: Tensor, loss: Tensor) -> None:
        require(tuple(s.shape) == (self.n_instances, s.shape[1], self.n_dims),
                f"tell got s of shape {list(s.shape)}; expected [{self.n_instances}, q, {self.n_dims}]")
        require(tuple(loss.shape) == tuple(s.shape[:2]), f"tell got loss {list(loss.shape)} for s {list(s.shape)}")
        require(bool(torch.isfinite(loss).all()), "the loss has NaN/inf: the model returned non-finite outputs")
        self.X = torch.cat([self.X, s.detach().cpu().double()], 1)
        self.Y = torch.cat([self.Y, loss.detach().cpu().double()], 1)

    def _restrict_history(self, rows: Tensor) -> None:
        """Keep the instances at ``rows`` ``[n]`` of the N this examiner was built for (a shard of an
        examination): ``n_all`` remembers N, so draws made for all N can keep the shard's rows."""
        require(int(rows.min()) >= 0 and int(rows.max()) < self.n_instances, f"shard rows outside 0..{self.n_instances - 1}")
        self.n_all, self.rows = self.n_instances, rows.clone()
        self.n_instances = len(rows)
        self.X, self.Y = self.X[rows], self.Y[rows]

    def _history_state(self) -> dict[str, Any]:
        return {"X": self.X.clone(), "Y": self.Y.clone()}

    def _load_history(self, state: dict[str, Any]) -> None:
        self.X, self.Y = state["X"].double(), state["Y"].double()
