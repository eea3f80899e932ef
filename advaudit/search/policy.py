"""The contract every error-search method follows, batched over replications.

A :class:`PoolBatch` is what a method may look at for ``R`` pools at once (no labels). A policy
is started on it, then asked ``budget`` times for the next item of every pool (``next() -> [R]``)
and told the oracle's answers (``observe``). Static scorers (adversarial distance, GAD,
confidence, random) rank once; adaptive policies (bandit, coverage, facility locations) update
their state from the answers. ``R = 1`` with a person as oracle is the interactive case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch
from torch import Tensor

Oracle = Callable[[Tensor, Tensor], Tensor]
"""``oracle(rows [R], positions [R]) -> [R]`` bool: is that pool item a model error?"""


@dataclass
class PoolBatch:
    """``R`` pools of ``P`` items each.

    Attributes:
        features: ``[R, P, D]`` item representation for clustering / coverage / meta-models
            (PCA of the inputs: the papers' derived feature space).
        confidence: ``[R, P]`` calibrated probability of the predicted (critical) class.
        scores: precomputed per-item scores ``{name: [R, P]}`` (lower = query first).
    """

    features: Tensor
    confidence: Tensor
    scores: dict[str, Tensor] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.confidence.shape)  # type: ignore[return-value]


class QueryPolicy(Protocol):
    """Chooses which pool items to show the oracle, one per pool per call."""

    name: str

    def start(self, pools: PoolBatch, generator: torch.Generator) -> None: ...

    def next(self) -> Tensor:
        """``[R]`` int64 positions (in ``0..P-1``) of the next, not yet queried, item per pool."""
        ...

    def observe(self, positions: Tensor, is_error: Tensor) -> None:
        """Record the oracle's answers ``[R]`` for the items just returned by :meth:`next`."""
        ...


def run_policy(policy: QueryPolicy, pools: PoolBatch, oracle: Oracle, budget: int,
               generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Query ``budget`` items per pool; returns positions ``[R, B]`` and answers ``[R, B]`` (bool)."""
    rows = torch.arange(pools.shape[0])
    policy.start(pools, generator)
    positions, answers = [], []
    for _ in range(min(budget, pools.shape[1])):
        chosen = policy.next()
        is_error = oracle(rows, chosen)
        policy.observe(chosen, is_error)
        positions.append(chosen)
        answers.append(is_error)
    return torch.stack(positions, 1), torch.stack(answers, 1)


def label_oracle(truth: Tensor) -> Oracle:
    """The experiments' oracle: ``truth`` ``[R, P]`` bool (item is a model error) answers instantly."""
    return lambda rows, positions: truth[rows, positions]
