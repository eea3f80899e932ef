"""Which proposals the reference judge must see so that every reported number is exact.

The reference judge (:class:`advaudit.worlds.validity.ValidityJudge`) is one more forward pass per
query, yet its verdict changes a result only where a proposal could matter to one (Shapes: ``[N, q]``
per step, in query order):

- it passes the geometric checks and its true-class probability beats the instance's running worst
  *valid* one (lower; higher in ``mode=strength``): it could become the worst valid case, at any
  budget (``examine/worst@b``, the curve, the gallery, the replay). While an instance has no valid
  proposal yet, every proposal that passes the geometric checks is judged, so "has a valid proposal"
  is exact too;
- it is below the instance's running raw minimum (the raw worst whose validity the report gives);
- it is misclassified while the instance has no valid misclassified proposal yet (the failure rate);
- it passes the geometric checks and belongs to the final window of a report budget (the iterations
  that make its last 32 queries: ``examine/E_T_valid`` and ``E_T_valid@b``, the last iteration's invalid
  share);
- it is in the **share sample**: a fixed, seeded share of every instance's queries
  (``audit.validity.share_sample``, drawn from the instance id and the query's index, so it does not
  depend on the examiner, on resuming or on sharding). The shares of invalid proposals over all
  queries (``examine/invalid_share``, the reference check's share, each instance's share) are
  measured on this sample, judged or not lazily alike; ``share_sample=1`` gives the share over all.

A proposal the judge did not see has no reference verdict (``None`` in ``steps.jsonl``); none of them
can change a reported number, so lazy and eager judging (``audit.validity.lazy=false``) give the same
``result.json``. The examiner is told the same losses either way: validity never enters ``tell``.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import torch
from torch import Tensor

_MASK32 = np.uint64(0xFFFFFFFF)


def share_sample(ids: Any, queries: Any, seed: int, rate: float) -> np.ndarray:
    """``[N, Q]`` bool: whether query ``queries[j]`` (0-based index in the instance's examination) of the
    instance with id ``ids[i]`` is in the share sample (a 32-bit integer hash of id, index and seed,
    below ``rate`` of its range)."""
    if rate >= 1:
        return np.ones((len(ids), len(queries)), dtype=bool)
    with np.errstate(over="ignore"):
        x = (np.asarray(ids, dtype=np.uint64)[:, None] * np.uint64(0x9E3779B1)
             + (np.asarray(queries, dtype=np.uint64)[None, :] + np.uint64(1)) * np.uint64(0x85EBCA77)
             + np.uint64(int(seed) & 0xFFFFFFFF) * np.uint64(0xC2B2AE3D)) & _MASK32
        for shift, factor in ((16, 0x7FEB352D), (15, 0x846CA68B)):
            x ^= x >> np.uint64(shift)
            x = (x * np.uint64(factor)) & _MASK32
        x ^= x >> np.uint64(16)
    return x.astype(np.float64) < rate * 2.0 ** 32


class LazyJudging:
    """Per-instance running state that says which proposals of a step need the reference judge.

    Args:
        ids: ``[N]`` instance ids (for the share sample).
        strength: ``mode=strength`` (the worst valid case is the highest true-class probability).
        seed, rate: the share sample's seed and share (:func:`share_sample`).
    """

    def __init__(self, ids: Tensor, strength: bool, seed: int, rate: float) -> None:
        n = len(ids)
        self.ids, self.strength, self.seed, self.rate = ids.cpu().numpy(), strength, int(seed), float(rate)
        self.best_valid = torch.full((n,), -torch.inf if strength else torch.inf, dtype=torch.float64)
        self.raw_min = torch.full((n,), torch.inf, dtype=torch.float64)
        self.failed = torch.zeros(n, dtype=torch.bool)

    def needed(self, first_query: int, true_prob: Tensor, wrong: Tensor, geometric: Tensor, in_window: bool) -> Tensor:
        """``[N, q]`` bool: the proposals of this step (queries ``first_query ..``) the judge must see, from
        their true-class probabilities, misclassification and geometric verdicts (each ``[N, q]``);
        ``in_window``: the step lies in a report budget's final window (all of it is judged)."""
        n, q = true_prob.shape
        sampled = torch.from_numpy(share_sample(self.ids, range(first_query, first_query + q), self.seed, self.rate))
        if in_window:  # a proposal the geometric checks throw out is invalid whatever the judge says
            return geometric | sampled
        p = true_prob.double()
        beats = p > self.best_valid[:, None] if self.strength else p < self.best_valid[:, None]
        matter = beats | (p < self.raw_min[:, None]) | (wrong & ~self.failed[:, None])
        return (geometric & matter) | sampled

    def update(self, true_prob: Tensor, wrong: Tensor, valid: Tensor) -> None:
        """Take in a step's proposals ``[N, q]`` with their verdicts (``valid`` False where not judged)."""
        p = true_prob.double()
        fill = -torch.inf if self.strength else torch.inf
        masked = torch.where(valid, p, torch.full_like(p, fill))
        self.best_valid = (torch.maximum(self.best_valid, masked.amax(1)) if self.strength
                           else torch.minimum(self.best_valid, masked.amin(1)))
        self.raw_min = torch.minimum(self.raw_min, p.amin(1))
        self.failed |= (wrong & valid).any(1)

    def replay(self, records: Iterable[dict[str, Any]], row_of: dict[int, int]) -> None:
        """Rebuild the state from ``steps.jsonl`` records (a resumed examination); ``row_of``: id -> row."""
        for r in records:
            i = row_of[int(r["instance"])]
            p = torch.tensor(r["true_prob"], dtype=torch.float64)
            wrong = torch.tensor([pred != r["label"] for pred in r["predicted"]])
            valid = torch.tensor([v is True for v in r["valid"]])
            if bool(valid.any()):
                best = p[valid].max() if self.strength else p[valid].min()
                self.best_valid[i] = max(self.best_valid[i], best) if self.strength else min(self.best_valid[i], best)
            self.raw_min[i] = min(self.raw_min[i], p.min())
            self.failed[i] |= bool((wrong & valid).any())


def share_mask(history: dict[str, Any], seed: int, rate: float) -> np.ndarray:
    """``[N, Q]`` bool: the queries the shares of invalid proposals are measured on (the share sample of
    :mod:`advaudit.audits.lazy_validity` when a reference judge is in the check, else every query)."""
    sampled = "reference" in history["checks"] and rate < 1
    return share_sample(history["ids"], range(history["true_prob"].shape[1]), seed, rate if sampled else 1.0)


def invalid_shares(history: dict[str, Any], sample: np.ndarray) -> dict[str, Any]:
    """Shares of invalid proposals: overall and per check over ``sample`` ``[N, Q]`` (the geometric checks
    over every query), and per instance ``[N]`` (NaN for an instance with no query in the sample)."""
    valid = history["valid"]
    per_check = {name: float(1 - (passed[sample] if name == "reference" else passed).mean())
                 for name, passed in history["checks"].items()}
    count = sample.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_instance = np.where(count > 0, 1 - (valid & sample).sum(1) / np.maximum(count, 1), np.nan)
    return {"overall": float(1 - valid[sample].mean()), "checks": per_check, "per_instance": per_instance}
