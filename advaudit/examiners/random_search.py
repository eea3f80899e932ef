"""Uniform random search: the standard evaluation protocol's baseline."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from advaudit.config import typed
from advaudit.examiners.protocol import HistoryMixin
from advaudit.examiners.settings import RandomExaminerConf


class RandomExaminer(HistoryMixin):
    """Samples ``q`` uniform candidates per instance per step (seeded)."""

    def __init__(self, n_instances: int, n_dims: int, seed: int = 0, device: str | torch.device = "cpu",
                 periodic: Any = None, **settings: Any) -> None:
        """``settings``: :class:`~advaudit.examiners.settings.RandomExaminerConf`'s fields (``q``). ``device`` and
        ``periodic`` are taken as every examiner takes them; uniform draws on the unit cube need neither
        (uniform on an interval is uniform on its circle)."""
        self._init_history(n_instances, n_dims, typed(RandomExaminerConf, settings).q)
        self.generator = torch.Generator().manual_seed(int(seed))

    def ask(self) -> Tensor:
        rows = getattr(self, "rows", None)
        if rows is None:
            return torch.rand(self.n_instances, self.q, self.n_dims, generator=self.generator)
        return torch.rand(self.n_all, self.q, self.n_dims, generator=self.generator)[rows]

    def restrict(self, rows: Tensor) -> None:
        """Examine only the instances at ``rows`` ``[n]``: the draws are made for all N and keep these rows,
        so each instance gets the candidates it gets in the whole examination."""
        self._restrict_history(rows)

    def tell(self, s: Tensor, loss: Tensor) -> None:
        self._record(s, loss)

    def state_dict(self) -> dict[str, Any]:
        return {**self._history_state(), "rng": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        self.generator.set_state(state["rng"])
