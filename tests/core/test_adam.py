"""advaudit's Adam (the RL examiner's, GAD's pseudo-model's) is ``torch.optim.Adam``: the same parameters to the bit over many steps, and state dicts
that load into each other (a checkpoint written before resumes after)."""

from __future__ import annotations

import torch
from torch import nn

from advaudit.core.adam import Adam


def _params(seed: int) -> list[nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    return [nn.Parameter(torch.randn(4, 7, generator=g)), nn.Parameter(torch.randn(3, generator=g))]


def _steps(optimizer, params: list[nn.Parameter], seed: int, n: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        optimizer.zero_grad()
        loss = sum(((p - torch.randn(p.shape, generator=g)) ** 2).sum() for p in params)
        loss.backward()
        optimizer.step()


def test_the_update_is_torchs_adam_to_the_bit() -> None:
    ours, theirs = _params(0), _params(0)
    _steps(Adam(ours, lr=0.01), ours, 1, 30)
    _steps(torch.optim.Adam(theirs, lr=0.01), theirs, 1, 30)
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


def test_state_dicts_load_both_ways_and_the_run_goes_on_identically() -> None:
    a, b = _params(2), _params(2)
    first, second = Adam(a, lr=0.02), torch.optim.Adam(b, lr=0.02)
    _steps(first, a, 3, 5)
    _steps(second, b, 3, 5)
    resumed_ours, resumed_theirs = Adam(a, lr=0.5), torch.optim.Adam(b, lr=0.5)
    resumed_ours.load_state_dict(second.state_dict())        # torch's checkpoint into ours
    resumed_theirs.load_state_dict(first.state_dict())       # ours into torch's
    assert resumed_ours.lr == 0.02
    _steps(resumed_ours, a, 4, 5)
    _steps(resumed_theirs, b, 4, 5)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
