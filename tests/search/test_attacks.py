"""Attacks behind adversarial distance and GAD, on models whose exact boundary distance is known."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from advaudit.errors import AdvauditError
from advaudit.search.attacks import batched_hop_skip_jump, foolbox_attack, mae, nearest_differently_labelled
from advaudit.search.gad_attack import sign_gradient_attack
from advaudit.search.pseudo_model import PseudoModelSettings, extract_pseudo_model, latin_hypercube


def linear_model(d: int = 16, seed: int = 0) -> nn.Linear:
    """Two-class linear logits: class 1 iff ``w . x + b > 0``."""
    torch.manual_seed(seed)
    model = nn.Linear(d, 2)
    with torch.no_grad():
        model.weight[0] = 0
        model.bias[0] = 0
        model.bias[1] = -0.5 * float(model.weight[1].sum())  # boundary through the cube's centre
    return model


def test_batched_hop_skip_jump_approaches_the_exact_boundary_distance() -> None:
    model = linear_model()
    x = torch.rand(64, 16, generator=torch.Generator().manual_seed(1))
    labels = lambda b: model(b).argmax(1)  # noqa: E731
    with torch.no_grad():
        w, b = model.weight[1], model.bias[1]
        exact = (x @ w + b).abs() / w.norm()
        pool = torch.rand(400, 16, generator=torch.Generator().manual_seed(2))
        starts = nearest_differently_labelled(x, labels(x), pool, labels(pool))
        result = batched_hop_skip_jump(x, labels, starts, steps=12, gradient_queries=32, bounds=(0.0, 1.0))
    assert bool(result.ok.all())
    assert bool((labels(result.adversarial) != labels(x)).all())
    found = (result.adversarial - x).norm(dim=1)
    assert bool((found >= exact - 1e-4).all())            # never closer than the true boundary
    assert float((found / exact).median()) < 1.3           # and close to it after 12 steps
    start_ratio = float(((starts - x).norm(dim=1) / exact).median())
    assert start_ratio > 1.5                               # the attack, not the start, did the work
    assert torch.allclose(mae(x, x + 0.5), torch.full((64,), 0.5))


def test_no_differently_labelled_start_is_a_clear_error() -> None:
    x = torch.rand(3, 4)
    with pytest.raises(AdvauditError, match="nowhere to start"):
        nearest_differently_labelled(x, torch.zeros(3, dtype=torch.long), torch.rand(5, 4), torch.zeros(5, dtype=torch.long))


def test_foolbox_attack_marks_items_it_cannot_attack() -> None:
    class Constant(nn.Module):  # predicts class 0 everywhere: no adversarial exists
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.stack([torch.ones(len(x)), torch.zeros(len(x))], 1) + 0 * x.sum(1, keepdim=True)

    x = torch.rand(3, 4)
    result = foolbox_attack(x, Constant(), "boundary", steps=5)
    assert not bool(result.ok.any()) and bool(result.adversarial.isnan().all())
    model = linear_model(4)
    ok_result = foolbox_attack(torch.rand(6, 4, generator=torch.Generator().manual_seed(3)), model, "hop_skip_jump",
                               steps=3)
    assert bool(ok_result.ok.all())
    with pytest.raises(AdvauditError, match="unknown foolbox attack"):
        foolbox_attack(x, model, "carlini", steps=1)


def test_gad_sign_attack_flips_a_black_box_or_says_never() -> None:
    model = linear_model(4)
    black_box = lambda b: model(b).argmax(1)  # noqa: E731
    pseudo = lambda b: torch.softmax(model(b), 1)[:, 1]  # noqa: E731  a perfect pseudo model of class 1
    x = torch.rand(200, 4, generator=torch.Generator().manual_seed(4))
    x = x[black_box(x) == 1][:20]
    low, high = torch.zeros(4), torch.ones(4)
    result = sign_gradient_attack(x, black_box, pseudo, low, high, step=0.01, max_steps=300)
    assert bool(result.ok.all()) and bool((black_box(result.adversarial) == 0).all())
    assert bool((result.adversarial >= low).all() and (result.adversarial <= high).all())
    never = sign_gradient_attack(x, lambda b: torch.ones(len(b), dtype=torch.long), pseudo, low, high,
                                 step=0.01, max_steps=5)
    assert not bool(never.ok.any()) and bool(never.adversarial.isnan().all())
    with pytest.raises(AdvauditError, match="step > 0"):
        sign_gradient_attack(x, black_box, pseudo, low, high, step=0.0)


def test_pseudo_model_learns_a_smooth_black_box() -> None:
    data = torch.rand(300, 3, generator=torch.Generator().manual_seed(5)) * torch.tensor([1.0, 10.0, 100.0])
    black_box = lambda b: torch.sigmoid(3 * (b[:, 0] - 0.5) + 0.3 * (b[:, 1] - 5))  # noqa: E731
    design = latin_hypercube(data.min(0).values, data.max(0).values, 1000, seed=0)
    assert design.shape == (1000, 3)
    assert bool((design >= data.min(0).values).all() and (design <= data.max(0).values).all())
    model, r2 = extract_pseudo_model(black_box, data, PseudoModelSettings(design_size=3000, hidden=[32, 32],
                                                                          epochs=15, lr=3e-3))
    assert r2 > 0.9
    with pytest.raises(AdvauditError, match="lhs, pool or neighbourhood"):
        extract_pseudo_model(black_box, data, PseudoModelSettings(design="grid"))
