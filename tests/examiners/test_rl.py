"""RL examiner options: the REINFORCE baseline, and a partial last batch (contract 4)."""

from __future__ import annotations

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.examiners import build_examiner

N, D = 6, 3
OPTIMA = torch.rand(N, D, generator=torch.Generator().manual_seed(5))


def objective(u: torch.Tensor) -> torch.Tensor:
    return torch.exp(-8 * ((u - OPTIMA[:, None]) ** 2).sum(-1))


@pytest.mark.parametrize("baseline", ["batch_mean", "none"])  # ema: tests/examiners/test_examiners.py
def test_every_baseline_learns_towards_high_loss(baseline: str) -> None:
    examiner = build_examiner({"name": "rl", "q": 32, "lr": 0.02, "baseline": baseline}, N, D, seed=0)
    means = []
    for _ in range(25):
        u = examiner.ask()
        examiner.tell(u, objective(u))
        means.append(float(examiner.Y[:, -32:].mean()))
    assert sum(means[-5:]) / 5 > sum(means[:5]) / 5 + 0.15


def test_baselines_give_different_updates_from_the_same_batch() -> None:
    """batch_mean centres the rewards; none does not: same samples, different policy after one step."""
    heads = {}
    for baseline in ("batch_mean", "none"):
        examiner = build_examiner({"name": "rl", "q": 8, "lr": 0.05, "baseline": baseline}, N, D, seed=1)
        u = examiner.ask()
        examiner.tell(u, objective(u) + 5.0)  # a large common reward: only the baseline removes it
        heads[baseline] = examiner.policy.head_b.detach().clone()
    assert not torch.allclose(heads["batch_mean"], heads["none"])


def test_tell_accepts_a_partial_last_batch_of_the_asked_candidates() -> None:
    examiner = build_examiner({"name": "rl", "q": 8}, N, D, seed=0)
    u = examiner.ask()
    examiner.tell(u, objective(u))
    u = examiner.ask()
    examiner.tell(u[:, :3], objective(u[:, :3]))  # a budget of 11 queries: 8 + 3
    assert examiner.Y.shape == (N, 11) and torch.equal(examiner.X[:, 8:], u[:, :3])
    with pytest.raises(AdvauditError, match="only 8 were asked"):
        examiner.ask()
        examiner.tell(torch.rand(N, 9, D), torch.rand(N, 9))


def test_unknown_baseline_is_refused() -> None:
    with pytest.raises(AdvauditError, match=r"examiner: Invalid value 'mean', expected one of \[ema, batch_mean, none\]"):
        build_examiner({"name": "rl", "baseline": "mean"}, N, D)
