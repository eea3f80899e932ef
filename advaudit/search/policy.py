"""The contract every error-search method follows.

A :class:`Pool` is what a method may look at (no labels); an :data:`Oracle` answers one query at
a time; a :class:`QueryPolicy` returns the items to query, in order. Static scorers (adversarial
distance, GAD, confidence, random) rank once; adaptive policies (bandits, coverage, facility
locations) choose each next query from the answers so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch
from torch import Tensor

Oracle = Callable[[int], bool]
"""``oracle(i)`` is True when pool item ``i`` is a model error (true label != predicted)."""


@dataclass
class Pool:
    """An unlabeled pool of items the target predicts as the critical class.

    Attributes:
        features: ``[P, D]`` float item representation for clustering / coverage / meta-models
            (e.g. flattened inputs, or their PCA projection).
        confidence: ``[P]`` calibrated probability of the predicted (critical) class.
        scores: optional precomputed per-item scores ``{name: [P]}``, e.g. adversarial distance.
        index: ``[P]`` int64 positions of the pool's items in the dataset they were drawn from.
    """

    features: Tensor
    confidence: Tensor
    scores: dict[str, Tensor] = field(default_factory=dict)
    index: Tensor | None = None

    def __len__(self) -> int:
        return len(self.confidence)


class QueryPolicy(Protocol):
    """Chooses which pool items to show the oracle."""

    name: str

    def select(self, pool: Pool, budget: int, oracle: Oracle, generator: torch.Generator) -> Tensor:
        """Return ``[min(budget, P)]`` distinct int64 pool indices in query order."""
        ...
