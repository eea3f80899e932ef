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


def test_draws_follow_the_policy_and_never_pick_an_impossible_bin() -> None:
    """Inverse-CDF draws (one uniform per row): frequencies within 4 standard errors of each row's
    probabilities over 40,000 draws, and a bin of probability 0 is never drawn."""
    from advaudit.examiners.rl import BatchedLSTMPolicy

    policy = BatchedLSTMPolicy(2, 1, bins=5)
    p = torch.tensor([[0.1, 0.0, 0.2, 0.3, 0.4], [0.0, 0.0, 0.0, 0.5, 0.5]])
    probs = p[:, None].expand(2, 40_000, 5).contiguous()
    picks = policy._sample(probs, torch.Generator().manual_seed(0))
    assert picks.shape == (2, 40_000)
    freq = torch.stack([torch.bincount(row, minlength=5) for row in picks]).double() / 40_000
    se = (p.double() * (1 - p.double()) / 40_000).sqrt()
    assert ((freq - p.double()).abs() <= 4 * se + 1e-12).all(), freq
    assert (freq[p == 0] == 0).all()


def test_a_shard_of_policies_draws_what_its_instances_draw_in_one_job() -> None:
    """A restricted examiner's policies draw their rows of the whole examination's uniforms, so a shard asks
    what its instances ask in one job, step after step."""
    whole = build_examiner({"name": "rl", "q": 8}, N, D, seed=3)
    shard = build_examiner({"name": "rl", "q": 8}, N, D, seed=3)
    rows = torch.tensor([1, 4])
    shard.restrict(rows)
    for _ in range(3):
        u_whole, u_shard = whole.ask(), shard.ask()
        assert torch.equal(u_shard, u_whole[rows])
        whole.tell(u_whole, objective(u_whole))
        shard.tell(u_shard, objective_rows(u_shard, rows))


def objective_rows(u: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """:func:`objective` for the instances at ``rows`` (``u`` ``[len(rows), q, D]``)."""
    return torch.exp(-8 * ((u - OPTIMA[rows][:, None]) ** 2).sum(-1))
