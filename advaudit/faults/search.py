"""Confident, targeted failing tests: a walk in a generator's early-activation space or in pixels.

Generator tests (the generative-fault-tests paper): perturbations ``p_i`` are added to the outputs
of the first ``k`` generator blocks, each scaled per neuron by that neuron's activation std
(measured over samples), all starting at 0, under ``||p||_2 <= eps`` over all of them per seed.
Adam (lr 0.003) minimises the confident targeted loss
``L(p) = max_{y != y1} f_y(x) - f_{y1}(x) + kappa`` on the model's logits; a seed stops as soon
as ``L < 0`` or at the step cap. ``eps`` is fixed, or annealed (``1 + 0.1 t`` as in the public
adaptation of the authors' code). Untargeted mode: ``L = f_{y0} - max_{y != y0} f_y + kappa``.

Pixel tests (the baseline): the same loss, minimised by projected gradient steps on the image
within an L2 or Linf ball, clipped to [0, 1]. advaudit implements this PGD itself because the
margin ``kappa`` is part of the success criterion (foolbox's PGD stops at any misclassification).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor

from advaudit.errors import require
from advaudit.report.progress import progress


@dataclass
class FaultResult:
    """``tests`` ``[B, C, H, W]``, ``success`` ``[B]`` bool, ``steps`` ``[B]`` steps to success (cap if
    never), ``final_label`` ``[B]``, ``seconds`` for the batch and the perturbation's L2 norm ``[B]``
    (generator tests: over all scaled-to-std perturbations; pixel tests: of the pixel change)."""

    tests: Tensor
    success: Tensor
    steps: Tensor
    final_label: Tensor
    seconds: float
    perturbation_norm: Tensor


def margin_loss(logits: Tensor, source: Tensor, target: Tensor | None, kappa: float) -> Tensor:
    """``[B]`` confident targeted (``target`` given) or untargeted loss; ``< 0`` means success."""
    if target is not None:
        chosen = logits.gather(1, target[:, None]).squeeze(1)
        others = logits.scatter(1, target[:, None], -torch.inf).amax(1)
        return others - chosen + kappa
    own = logits.gather(1, source[:, None]).squeeze(1)
    others = logits.scatter(1, source[:, None], -torch.inf).amax(1)
    return own - others + kappa


@torch.no_grad()
def activation_scales(generator: torch.nn.Module, k: int, samples: int = 256, seed: int = 0) -> list[Tensor]:
    """Per-neuron activation std of the first ``k`` blocks over ``samples`` random (z, y): ``[...]`` each."""
    g = torch.Generator().manual_seed(seed)
    z = generator.sample_latent(samples, g)
    y = torch.randint(generator.num_classes, (samples,), generator=g)
    return [a.std(0).clamp_min(1e-6) for a in generator.activations(z, y, k)]


def joint_norm(parts: list[Tensor]) -> Tensor:
    """``[B]`` L2 norm of each seed's perturbations taken together."""
    return torch.sqrt(sum(p.flatten(1).pow(2).sum(1) for p in parts))


def _project(parts: list[Tensor], eps: Tensor) -> list[Tensor]:
    """Scale each seed's perturbations (``[B, ...]`` each) so their joint L2 norm is <= ``eps`` ``[B]``."""
    norm = joint_norm(parts).clamp_min(1e-12)
    factor = (eps / norm).clamp(max=1.0)
    return [p * factor.view(-1, *([1] * (p.dim() - 1))) for p in parts]


def generator_tests(generator: torch.nn.Module, model: torch.nn.Module, z: Tensor, y0: Tensor, y1: Tensor | None,
                    k: int, eps: float, kappa: float = 1.0, lr: float = 0.003, max_steps: int = 400,
                    anneal: bool = False, scales: list[Tensor] | None = None,
                    show_progress: bool = False) -> FaultResult:
    """Perturb the first ``k`` blocks of ``generator`` until ``model`` (logits) fails confidently.

    Args:
        z: ``[B, latent]`` and ``y0`` ``[B]``: the seeds; ``y1`` ``[B]`` the target classes (None: untargeted).
        eps: the L2 budget (fixed), or the cap of the annealed budget ``1 + 0.1 t``.
        show_progress: a bar over steps with the number of seeds already failing.
    """
    require(eps > 0, f"fault_tests eps={eps} must be > 0 (it bounds the perturbation's L2 norm)")
    require(1 <= k <= len(generator.blocks) - 1, f"fault_tests k={k} must be in 1..{len(generator.blocks) - 1}")
    start = time.perf_counter()
    scales = scales if scales is not None else activation_scales(generator, k)
    with torch.no_grad():
        shapes = [a.shape for a in generator.activations(z[:1], y0[:1], k)]
    parts = [torch.zeros((len(z),) + tuple(s[1:]), requires_grad=True) for s in shapes]
    optimizer = torch.optim.Adam(parts, lr=lr)
    done = torch.zeros(len(z), dtype=torch.bool)
    steps = torch.full((len(z),), max_steps, dtype=torch.long)
    tests = torch.zeros((len(z),) + tuple(generator.image_shape))
    norms = torch.zeros(len(z))
    bar = progress(total=max_steps, desc="generator walk", unit="step", disable=not show_progress)
    for step in range(max_steps + 1):
        # only seeds still searching are rendered: a finished seed keeps its first failing test
        active = (~done).nonzero().squeeze(1)
        x = generator(z[active], y0[active], [p[active] * s for p, s in zip(parts, scales)])
        loss = margin_loss(model(x), y0[active], None if y1 is None else y1[active], kappa)
        success = loss.detach() < 0
        tests[active] = x.detach()
        norms[active] = joint_norm([p.detach()[active] for p in parts])
        steps[active[success]] = step
        done[active[success]] = True
        bar.set_postfix(failing=f"{int(done.sum())}/{len(z)}", refresh=False)
        if bool(done.all()) or step == max_steps:
            break
        bar.update()
        optimizer.zero_grad()
        loss[~success].sum().backward()
        optimizer.step()
        with torch.no_grad():
            budget = torch.full((len(z),), min(1.0 + 0.1 * step, eps) if anneal else eps)
            for p, projected in zip(parts, _project([p.detach() for p in parts], budget)):
                p.copy_(torch.where(done.view(-1, *([1] * (p.dim() - 1))), p, projected))
    bar.close()
    with torch.no_grad():
        label = model(tests).argmax(1)
    return FaultResult(tests, done, steps, label, time.perf_counter() - start, norms)


def pixel_tests(model: torch.nn.Module, x: Tensor, y0: Tensor, y1: Tensor | None, eps: float, norm: str = "l2",
                kappa: float = 1.0, steps: int = 100, step_size: float | None = None) -> FaultResult:
    """PGD on the pixels of ``x`` ``[B, C, H, W]`` with the same confident margin loss."""
    require(eps > 0, f"pixel baseline eps={eps} must be > 0")
    require(norm in ("l2", "linf"), f"pixel baseline norm={norm!r}; use l2 or linf")
    start = time.perf_counter()
    step_size = step_size if step_size is not None else 2.5 * eps / steps
    delta = torch.zeros_like(x)
    done = torch.zeros(len(x), dtype=torch.bool)
    taken = torch.full((len(x),), steps, dtype=torch.long)
    tests = x.clone()
    view = (-1, 1, 1, 1)
    for step in range(steps + 1):
        delta.requires_grad_(True)
        candidate = (x + delta).clamp(0, 1)
        loss = margin_loss(model(candidate), y0, y1, kappa)
        newly = (loss.detach() < 0) & ~done
        taken[newly] = step
        done |= newly
        tests = torch.where(newly.view(view), candidate.detach(), tests)
        if bool(done.all()) or step == steps:
            break
        (grad,) = torch.autograd.grad(loss.sum(), delta)
        with torch.no_grad():
            if norm == "linf":
                delta = (delta - step_size * grad.sign()).clamp(-eps, eps)
            else:
                g = grad.flatten(1)
                delta = delta - step_size * (g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)).view_as(x)
                delta = delta * (eps / delta.flatten(1).norm(dim=1).clamp_min(1e-12)).clamp(max=1.0).view(view)
            delta = torch.where(done.view(view), torch.zeros_like(delta), delta)
    tests = torch.where(done.view(view), tests, (x + delta.detach()).clamp(0, 1))
    with torch.no_grad():
        label = model(tests).argmax(1)
    return FaultResult(tests, done, taken, label, time.perf_counter() - start, (tests - x).flatten(1).norm(dim=1))


def pixel_distances(seed: Tensor, test: Tensor) -> dict[str, Tensor]:
    """Per-item ``l2`` and ``linf`` distances ``[B]`` between seed and test images."""
    diff = (test - seed).flatten(1)
    return {"l2": diff.norm(dim=1), "linf": diff.abs().amax(1)}
