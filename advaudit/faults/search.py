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
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch import Tensor

from advaudit.core.progress import progress
from advaudit.errors import require
from advaudit.models.generators.generator_folding import folded
from advaudit.runtime import module_device


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

    def cpu(self) -> "FaultResult":
        """The same result with every tensor on the CPU."""
        return FaultResult(self.tests.cpu(), self.success.cpu(), self.steps.cpu(), self.final_label.cpu(),
                           self.seconds, self.perturbation_norm.cpu())

    def subset(self, rows: slice | Tensor) -> "FaultResult":
        """The tests of ``rows``; ``seconds`` is shared out in proportion to the rows kept."""
        tests = self.tests[rows]
        share = len(tests) / max(len(self.tests), 1)
        return FaultResult(tests, self.success[rows], self.steps[rows], self.final_label[rows],
                           self.seconds * share, self.perturbation_norm[rows])

    @staticmethod
    def concat(parts: list["FaultResult"]) -> "FaultResult":
        """One result from consecutive batches (their times add up)."""
        return FaultResult(torch.cat([p.tests for p in parts]), torch.cat([p.success for p in parts]),
                           torch.cat([p.steps for p in parts]), torch.cat([p.final_label for p in parts]),
                           sum(p.seconds for p in parts), torch.cat([p.perturbation_norm for p in parts]))


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
    """Per-neuron activation std of the first ``k`` blocks over ``samples`` random (z, y): ``[...]`` each.

    (z, y) are drawn on the CPU from ``seed`` and moved to the generator's device, so the scales are
    the same on every device."""
    device = module_device(generator)
    g = torch.Generator().manual_seed(seed)
    z = generator.sample_latent(samples, g).to(device)
    y = torch.randint(generator.num_classes, (samples,), generator=g).to(device)
    return [a.std(0).clamp_min(1e-6) for a in generator.activations(z, y, k)]


def joint_norm(parts: list[Tensor]) -> Tensor:
    """``[B]`` L2 norm of each seed's perturbations taken together."""
    return torch.sqrt(sum(p.flatten(1).pow(2).sum(1) for p in parts))


def _project(parts: list[Tensor], eps: float) -> list[Tensor]:
    """Scale each seed's perturbations (``[B, ...]`` each) so their joint L2 norm is <= ``eps``."""
    norm = joint_norm(parts).clamp_min(1e-12)
    factor = (eps / norm).clamp(max=1.0)
    return [p * factor.view(-1, *([1] * (p.dim() - 1))) for p in parts]


@contextmanager
def frozen(module: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """``module`` with ``requires_grad`` off for all its parameters (restored on exit): gradients
    then flow to the inputs only, and backward skips the weight gradients nobody reads."""
    previous = [p.requires_grad for p in module.parameters()]
    module.requires_grad_(False)
    try:
        yield module
    finally:
        for p, flag in zip(module.parameters(), previous):
            p.requires_grad_(flag)


def generator_tests(generator: torch.nn.Module, model: torch.nn.Module, z: Tensor, y0: Tensor, y1: Tensor | None,
                    k: int, eps: float, kappa: float = 1.0, lr: float = 0.003, max_steps: int = 400,
                    anneal: bool = False, scales: list[Tensor] | None = None,
                    show_progress: bool = False, compact_every: int | None = None) -> FaultResult:
    """Perturb the first ``k`` blocks of ``generator`` until ``model`` (logits) fails confidently.

    Every seed walks on its own (Adam is elementwise, BatchNorm is in eval mode), so seeds of any
    classes and targets (both directions of a fault, say) share one batch: one forward and one
    backward pass per step serve all seeds still searching.

    Args:
        z: ``[B, latent]`` and ``y0`` ``[B]``: the seeds; ``y1`` ``[B]`` the target classes (None: untargeted).
            On the device of ``generator`` and ``model``; the result stays on that device.
        eps: the L2 budget (fixed), or the cap of the annealed budget ``1 + 0.1 t``.
        show_progress: a bar over steps with the number of seeds already failing.
        compact_every: every this many steps the batch drops the seeds that already failed (a
            host-device synchronisation); in between, finished seeds ride along masked, their first
            failing test kept. Default: every step on the CPU (compute is the cost there), every
            10 steps on an accelerator (synchronisation is).

    The walk runs :func:`advaudit.models.generators.generator_folding.folded` (the same function with
    BatchNorm folded and upsample + conv as one transposed conv) and the model with its weights
    frozen; both are exact rewrites, so results match the plain generator to float precision.
    """
    require(eps > 0, f"fault_tests eps={eps} must be > 0 (it bounds the perturbation's L2 norm)")
    require(1 <= k <= len(generator.blocks) - 1, f"fault_tests k={k} must be in 1..{len(generator.blocks) - 1}")
    device = z.device
    for name, module in (("generator", generator), ("model", model)):
        require(module_device(module) == device, f"the {name} is on {module_device(module)} but the seeds are on {device}; "
                "move generator, target and seeds to one device (the audit does: device=auto|cpu|cuda)")
    start = time.perf_counter()
    walker = folded(generator)
    scales = scales if scales is not None else activation_scales(walker, k)
    walk = _Walk.start(walker, z, y0, k, tuple(generator.image_shape), max_steps, lr)
    n = len(z)
    compact_every = max(1, int(compact_every or (1 if device.type == "cpu" else 10)))
    active = torch.arange(n, device=device)
    bar = progress(total=max_steps, desc="generator walk", unit="step", disable=not show_progress)
    with frozen(model):
        for step in range(max_steps + 1):
            x = walker(z[active], y0[active], [p[active] * s for p, s in zip(walk.parts, scales)])
            logits = model(x)
            loss = margin_loss(logits, y0[active], None if y1 is None else y1[active], kappa)
            searching, failed = walk.keep(active, step, step == max_steps, x, logits, loss)
            if step == max_steps:
                break
            walk.advance(loss * (searching & ~failed), min(1.0 + 0.1 * step, eps) if anneal else eps)
            bar.update()
            if (step + 1) % compact_every == 0:
                active = (~walk.done).nonzero().squeeze(1)
                bar.set_postfix(failing=f"{int(walk.done.sum())}/{n}", refresh=False)
                if not len(active):
                    break
    bar.close()
    return FaultResult(walk.tests, walk.done, walk.steps, walk.labels, time.perf_counter() - start, walk.norms)


@dataclass
class _Walk:
    """A batched generator walk of ``n`` seeds: the perturbations ``parts`` (one ``[n, ...]`` per perturbed
    block, in units of the block's activation scale) and their optimiser; per seed whether it ``done``
    (failed), the step it first failed (``steps`` ``[n]``, ``max_steps`` if never), its test image
    (``tests`` ``[n, C, H, W]``), the perturbation's joint norm there (``norms`` ``[n]``) and the class
    predicted there (``labels`` ``[n]``)."""

    parts: list[Tensor]
    optimizer: torch.optim.Optimizer
    done: Tensor
    steps: Tensor
    tests: Tensor
    norms: Tensor
    labels: Tensor

    @classmethod
    def start(cls, walker: Any, z: Tensor, y0: Tensor, k: int, image_shape: tuple[int, ...], max_steps: int,
              lr: float) -> "_Walk":
        """Zero perturbations of the first ``k`` blocks' activations for the seeds ``z`` ``[n, latent]``."""
        device, n = z.device, len(z)
        with torch.no_grad():
            shapes = [a.shape for a in walker.activations(z[:1], y0[:1], k)]
        parts = [torch.zeros((n,) + tuple(s[1:]), device=device, requires_grad=True) for s in shapes]
        return cls(parts, torch.optim.Adam(parts, lr=lr), torch.zeros(n, dtype=torch.bool, device=device),
                   torch.full((n,), max_steps, dtype=torch.long, device=device),
                   torch.zeros((n,) + image_shape, device=device), torch.zeros(n, device=device),
                   torch.zeros(n, dtype=torch.long, device=device))

    def keep(self, active: Tensor, step: int, last: bool, x: Tensor, logits: Tensor,
             loss: Tensor) -> tuple[Tensor, Tensor]:
        """Record the tests of the ``active`` seeds (``[a]`` rows) that fail at ``step`` (or all still searching
        at the ``last`` step); returns which of them were still searching and which failed now (``[a]`` bool)."""
        searching = ~self.done[active]
        # a seed's test is its first failing image, or its last image if it never fails
        keep = searching & ((loss.detach() < 0) | last)
        with torch.no_grad():
            rows = keep.view(-1, *([1] * (self.tests.dim() - 1)))
            self.tests[active] = torch.where(rows, x.detach(), self.tests[active])
            self.norms[active] = torch.where(keep, joint_norm([p[active] for p in self.parts]), self.norms[active])
            self.labels[active] = torch.where(keep, logits.argmax(1), self.labels[active])
            failed = keep & (loss.detach() < 0)
            self.steps[active] = torch.where(failed, step, self.steps[active])
            self.done[active] = self.done[active] | failed
        return searching, failed

    def advance(self, loss: Tensor, budget: float) -> None:
        """One Adam step on the summed ``loss`` ``[a]`` (zero for seeds no longer searching), then project the
        perturbations back onto the L2 ball of radius ``budget``."""
        self.optimizer.zero_grad()
        loss.sum().backward()
        self.optimizer.step()
        with torch.no_grad():
            for p, projected in zip(self.parts, _project([p.detach() for p in self.parts], budget)):
                p.copy_(projected)


def pixel_tests(model: torch.nn.Module, x: Tensor, y0: Tensor, y1: Tensor | None, eps: float, norm: str = "l2",
                kappa: float = 1.0, steps: int = 100, step_size: float | None = None) -> FaultResult:
    """PGD on the pixels of ``x`` ``[B, C, H, W]`` with the same confident margin loss (on ``x``'s device)."""
    require(eps > 0, f"pixel baseline eps={eps} must be > 0")
    require(norm in ("l2", "linf"), f"pixel baseline norm={norm!r}; use l2 or linf")
    start = time.perf_counter()
    step_size = step_size if step_size is not None else 2.5 * eps / steps
    delta = torch.zeros_like(x)
    done = torch.zeros(len(x), dtype=torch.bool, device=x.device)
    taken = torch.full((len(x),), steps, dtype=torch.long, device=x.device)
    tests = x.clone()
    view = (-1, 1, 1, 1)
    with frozen(model):
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
