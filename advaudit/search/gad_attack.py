"""The generalised adversarial attack (Algorithm 2 of the GAD paper), batched over items.

``x_adv <- x_adv + eps * sign(grad J)`` with the gradient taken through the pseudo model ``M_P``,
repeated until the black box ``M_O`` changes its prediction. The paper's ``J`` is ``M_P``'s
training loss against ``c = conf(M_P(x))``; at ``x_adv = x`` that gradient is exactly zero, so
advaudit takes ``J = (M_P(x_adv) - 1)^2``, the MSE against "certainly the class of interest",
whose ascent lowers the pseudo confidence (documented in docs/results/error_search/error-search.md). Its gradient has the sign
of ``-grad logit M_P`` while ``M_P < 1``; advaudit steps along that sign, which (unlike the sigmoid's
gradient) does not underflow to zero where the pseudo model is saturated. Steps are in each
feature's range units (``eps * (high - low)``), iterates stay in the data's box, and an item still
unflipped after ``max_steps`` is returned as "never flipped" (``ok = False``).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from advaudit.errors import require
from advaudit.search.attacks import AttackResult


def sign_gradient_attack(x: Tensor, black_box_labels: Callable[[Tensor], Tensor], pseudo_model: torch.nn.Module,
                         low: Tensor, high: Tensor, step: float = 0.01, max_steps: int = 500) -> AttackResult:
    """Attack every item of ``x`` ``[N, *shape]`` until ``black_box_labels`` (``[B, *shape] -> [B]``) flips.

    Args:
        pseudo_model: ``[B, *shape] -> [B]`` confidence of the class of interest (its ``logit``
            method is used when present).
        low, high: ``[*shape]`` data box; the step per feature is ``step * (high - low)``.
        max_steps: cap; items not flipped by then have ``ok = False`` and NaN adversarials.
    """
    require(step > 0 and max_steps >= 1, f"gad attack needs step > 0 and max_steps >= 1 (got {step}, {max_steps})")
    scale = (high - low).clamp_min(1e-12) * step
    original = black_box_labels(x)
    queries = len(x)
    adversarial = x.clone()
    active = torch.ones(len(x), dtype=torch.bool)
    done = torch.zeros(len(x), dtype=torch.bool)
    for _ in range(max_steps):
        if not bool(active.any()):
            break
        current = adversarial[active].detach().requires_grad_(True)
        logit = pseudo_model.logit(current) if hasattr(pseudo_model, "logit") else pseudo_model(current)
        (gradient,) = torch.autograd.grad(logit.sum(), current)
        moved = torch.maximum(torch.minimum(current.detach() - scale * gradient.sign(), high), low)
        adversarial[active] = moved
        flipped = black_box_labels(moved) != original[active]
        queries += len(moved)
        index = active.nonzero().squeeze(1)
        done[index[flipped]] = True
        active[index[flipped]] = False
    out = torch.where(done.view(-1, *([1] * (x.dim() - 1))), adversarial, torch.full_like(adversarial, float("nan")))
    return AttackResult(out, done, queries)
