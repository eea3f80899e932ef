"""Decision-based attacks for adversarial distance: only the target's predicted label is used.

Two backends, both returning one adversarial per item (or a marked failure):

``hsj`` (default): advaudit's batched HopSkipJump (Chen et al. 2020, L2), written in torch so one
    forward pass serves every item of a chunk. Initialisation needs no random search: each item
    starts from the nearest pool item the target labels differently, pulled to the boundary by a
    binary search on the blend, so it never fails while the pool has a second label.
``boundary`` / ``hop_skip_jump``: foolbox 3's ``BoundaryAttack`` (the paper's attack; L2, one
    candidate per step) and ``HopSkipJumpAttack``. Foolbox raises for a whole batch when its
    initialisation fails on one item; that chunk is retried item by item and failures are marked.

Every function takes raw inputs ``[N, *shape]`` in the target's input box ``[low, high]`` and a
``label_fn`` mapping ``[B, *shape] -> [B]`` predicted labels. :func:`attack_box` decides that box:
the data's real box ([0, 1] for images, the paper's pixel units), not each pixel's observed range.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor
from torch.fx.experimental.optimization import fuse

from advaudit.errors import AdvauditError, require
from advaudit.models.targets.target import TorchTarget

log = logging.getLogger(__name__)

LabelFn = Callable[[Tensor], Tensor]


@dataclass
class AttackResult:
    """``adversarial`` ``[N, *shape]`` (NaN rows where ``ok`` is False), ``ok`` ``[N]`` bool and the
    number of model queries spent."""

    adversarial: Tensor
    ok: Tensor
    queries: int


def attack_box(x: Tensor, box: Any = "auto") -> tuple[Tensor, Tensor]:
    """The box ``low``, ``high`` ``[*shape]`` attacks stay in and whose width is the MAE's unit.

    Args:
        x: ``[N, *shape]`` items of the split (images ``[N, C, H, W]`` or tables ``[N, F]``).
        box: ``auto``: ``[0, 1]`` for images (every advaudit image dataset is in [0, 1]; distances
            are then in pixel units, as in the adversarial-distance paper's MAE), each feature's
            observed ``[min, max]`` for tables (columns in different units count alike);
            ``observed``: each feature's observed range for images too; or ``[low, high]`` numbers.

    Raises :class:`AdvauditError` when the items lie outside the box.
    """
    if isinstance(box, str):
        require(box in ("auto", "observed"), f"box={box!r}; use auto, observed or [low, high]")
        if box == "auto" and x.dim() > 2:
            box = (0.0, 1.0)
        else:
            return x.min(0).values, x.max(0).values
    require(len(box) == 2 and float(box[0]) < float(box[1]), f"box={list(box)} must be [low, high] with low < high")
    low, high = float(box[0]), float(box[1])
    outside = int(((x < low) | (x > high)).flatten(1).any(1).sum())
    require(outside == 0, f"{outside} of {len(x)} items have values outside the attack box [{low}, {high}]; "
            "give the data's real range as [low, high] or use box=observed")
    return torch.full(x.shape[1:], low, dtype=x.dtype), torch.full(x.shape[1:], high, dtype=x.dtype)


def mae(x: Tensor, adversarial: Tensor) -> Tensor:
    """Mean absolute error per item ``[N]`` between ``x`` and ``adversarial`` ``[N, *shape]`` (Eq. 4)."""
    return (x - adversarial).abs().flatten(1).mean(1)


def label_function(target: Any, batch_size: int = 128) -> LabelFn:
    """``[B, *shape] -> [B]`` predicted labels of any target (decision-based access only).

    Torch targets: the argmax of the logits (temperature never changes it) of
    :func:`inference_logits`, computed on the target's device under ``torch.inference_mode`` in
    batches of ``batch_size`` (on a CPU, 128 images of a small CNN keep the activations in cache:
    faster than 256 or one large batch, see docs/results/scale/performance.md), returned on the input's device with
    one finiteness check per call. Other targets (scikit-learn black boxes):
    ``predict_proba(x).argmax(1)``.
    """
    if not isinstance(target, torch.nn.Module):
        return lambda x: target.predict_proba(x, calibrated=False).argmax(1).to(x.device)
    device = getattr(target, "device", torch.device("cpu"))
    logits_of = inference_logits(target.eval())

    def labels(x: Tensor) -> Tensor:
        out, finite = [], torch.ones((), dtype=torch.bool, device=device)
        with torch.inference_mode():
            for start in range(0, len(x), batch_size):
                logits = logits_of(x[start:start + batch_size].to(device, non_blocking=True))
                finite &= torch.isfinite(logits).all()
                out.append(logits.argmax(1))
        if not bool(finite):
            raise AdvauditError("the target returned NaN/inf logits during the attack; check the checkpoint "
                                "and that the attack box matches the inputs it was trained on")
        return torch.cat(out).to(x.device) if out else torch.empty(0, dtype=torch.long, device=x.device)

    return labels


def inference_logits(target: torch.nn.Module) -> Callable[[Tensor], Tensor]:
    """Raw input ``[B, *shape]`` -> logits ``[B, K]`` for queries (eval mode, no gradients).

    For a :class:`~advaudit.models.targets.target.TorchTarget` in eval mode, a copy of its net with every
    BatchNorm folded into the convolution before it (``torch.fx``; logits equal to float rounding,
    1.1-1.2x faster on a CPU), in the weights' memory format; the target itself where the net cannot
    be traced or is training. The copy is taken now: later changes to the target's weights are not seen.
    """
    if not isinstance(target, TorchTarget) or target.training:
        return target
    try:
        net = fuse(target.net, inplace=False)
    except Exception as error:  # untraceable control flow: query the target unchanged
        log.info("queries use the target unfused (%s: %s)", type(error).__name__, error)
        return target
    if any(p.dim() == 4 and p.is_contiguous(memory_format=torch.channels_last) and not p.is_contiguous()
           for p in target.net.parameters()):
        net = net.to(memory_format=torch.channels_last)
    return _FoldedTarget(net, target.mean, target.std)


class _FoldedTarget(torch.nn.Module):
    """Raw input ``[B, *shape]`` -> logits ``[B, K]`` of ``net`` (BatchNorm folded) after the target's normalisation."""

    def __init__(self, net: torch.nn.Module, mean: Tensor, std: Tensor) -> None:
        super().__init__()
        self.net, self.mean, self.std = net, mean, std

    def forward(self, x: Tensor) -> Tensor:
        return self.net((x - self.mean) / self.std)


def attack_items(target: Any, x: Tensor, candidates: Tensor, candidate_labels: Tensor,
                 bounds: tuple[Tensor | float, Tensor | float], **settings: Any) -> AttackResult:
    """Batched HopSkipJump on ``x`` ``[N, *shape]`` from the nearest differently-labelled ``candidates``
    ``[M, *shape]`` (labels ``[M]``), run entirely on the target's device; results on ``x``'s device.

    ``settings``: :func:`batched_hop_skip_jump` keywords (steps, gradient_queries, ...).
    """
    device = getattr(target, "device", torch.device("cpu")) if isinstance(target, torch.nn.Module) else x.device
    labels = label_function(target)
    x_d = x.to(device)
    starts = nearest_differently_labelled(x_d, labels(x_d), candidates.to(device), candidate_labels.to(device))
    low, high = (torch.as_tensor(b, dtype=x.dtype).to(device) for b in bounds)
    result = batched_hop_skip_jump(x_d, labels, starts, bounds=(low, high), **settings)
    return AttackResult(result.adversarial.to(x.device), result.ok.to(x.device), result.queries)


def margin_direction(model: torch.nn.Module, batch_size: int = 256) -> Callable[[Tensor, Tensor], Tensor]:
    """White-box ``direction_fn`` for :func:`batched_hop_skip_jump`: the input gradient ``[N, *shape]``
    of ``max_{k != y} z_k - z_y`` (logits ``z`` of ``model``), i.e. the boundary normal pointing to
    the adversarial side. For converged reference distances in benchmarks, not for black boxes."""

    def direction(x: Tensor, labels: Tensor) -> Tensor:
        out = []
        for start in range(0, len(x), batch_size):
            part = x[start:start + batch_size].detach().requires_grad_(True)
            with torch.enable_grad():
                logits = model(part)
                own = logits.gather(1, labels[start:start + batch_size, None]).squeeze(1)
                other = logits.scatter(1, labels[start:start + batch_size, None], -math.inf).amax(1)
                grad, = torch.autograd.grad((other - own).sum(), part)
            out.append(grad)
        return torch.cat(out)

    return direction


class _CountingLabels:
    """Wraps a label function, counting queries and asserting shapes."""

    def __init__(self, label_fn: LabelFn) -> None:
        self.label_fn, self.queries = label_fn, 0

    def __call__(self, x: Tensor) -> Tensor:
        self.queries += len(x)
        return self.label_fn(x)


def boundary_blend(x: Tensor, start: Tensor, labels: Tensor, label_fn: _CountingLabels,
                   steps: int = 12) -> Tensor:
    """Binary search on ``x + t (start - x)``: the point nearest ``x`` still labelled != ``labels``.

    ``x``, ``start`` ``[N, *shape]``; ``start`` must already be adversarial. Returns ``[N, *shape]``.
    """
    view = (-1,) + (1,) * (x.dim() - 1)
    low = torch.zeros(len(x), device=x.device)   # t = low is not adversarial (the original)
    high = torch.ones(len(x), device=x.device)   # t = high is adversarial
    for _ in range(steps):
        mid = (low + high) / 2
        adversarial = label_fn(x + mid.view(view) * (start - x)) != labels
        high = torch.where(adversarial, mid, high)
        low = torch.where(adversarial, low, mid)
    return x + high.view(view) * (start - x)


def nearest_differently_labelled(x: Tensor, labels: Tensor, candidates: Tensor, candidate_labels: Tensor,
                                 chunk: int = 512) -> Tensor:
    """For each ``x[i]``, the L2-nearest ``candidates[j]`` with ``candidate_labels[j] != labels[i]``.

    Raises :class:`AdvauditError` when no candidate has a different label.
    """
    out = torch.empty_like(x)
    flat_c = candidates.flatten(1)
    for start in range(0, len(x), chunk):
        part = x[start:start + chunk].flatten(1)
        distance = torch.cdist(part, flat_c)
        same = labels[start:start + chunk, None] == candidate_labels[None, :]
        distance = distance.masked_fill(same, math.inf)
        best = distance.argmin(1)
        if not torch.isfinite(distance.gather(1, best[:, None])).all():
            raise AdvauditError("every starting candidate has the item's own predicted label, so a "
                                "decision-based attack has nowhere to start; include items of other "
                                "predicted classes in search.attack.start_pool")
        out[start:start + chunk] = candidates[best]
    return out


def batched_hop_skip_jump(x: Tensor, label_fn: LabelFn, starts: Tensor, steps: int = 16,
                          gradient_queries: int = 32, max_gradient_queries: int = 128,
                          bounds: tuple[float, float] = (0.0, 1.0), binary_steps: int = 10,
                          seed: int = 0, direction_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
                          probe_resolution: int | None = None) -> AttackResult:
    """HopSkipJump (L2, untargeted) for all items at once.

    Args:
        x: ``[N, *shape]`` originals.
        label_fn: ``[B, *shape] -> [B]`` predicted labels (the only access to the model).
        starts: ``[N, *shape]`` adversarial starting points (e.g. differently-labelled pool items).
        steps: HSJ iterations (gradient estimate, geometric step, binary search each).
        gradient_queries: probes for the first gradient estimate; grows as ``sqrt(iteration)``
            up to ``max_gradient_queries``, as in the paper.
        bounds: input box; iterates are clipped to it.
        binary_steps: bisections per return to the boundary (precision ``2^-binary_steps`` of the gap).
        direction_fn: ``(boundary [N, *shape], labels [N]) -> [N, *shape]`` the exact direction
            towards the adversarial side (white-box), replacing the Monte-Carlo estimate; with it the
            iteration is HSJ's limit of infinitely many probes (a converged reference, not counted
            as queries).
        probe_resolution: images only: draw the gradient probes on a ``r x r`` grid per channel and
            upsample them bilinearly to the image size (QEBA's spatial subspace, Li et al. 2020): in
            784 dimensions k sign probes recover only a cosine of about sqrt(2k / (pi d)) with the
            boundary normal; on a 14 x 14 grid d is 4x smaller. ``None``: full-resolution probes (HSJ).
            On Fashion-MNIST it ranked *worse* against converged distances (docs/results/error_search/error-search.md).

    Queries per item: about ``binary_steps + steps * (probes + binary_steps + 1..10)``.
    """
    require(steps >= 0 and gradient_queries >= 1, "hsj needs steps >= 0 and gradient_queries >= 1")
    require(probe_resolution is None or (x.dim() == 4 and 1 <= probe_resolution <= min(x.shape[-2:])),
            f"probe_resolution={probe_resolution} needs images [N, C, H, W] and 1 <= r <= min(H, W); "
            "use null for tables")
    counter = _CountingLabels(label_fn)
    generator = torch.Generator(device=x.device).manual_seed(seed)  # probes drawn where the attack runs
    labels = counter(x)
    view = (-1,) + (1,) * (x.dim() - 1)
    d = x[0].numel()
    theta = 1.0 / (math.sqrt(d) * d)
    bad_start = counter(starts) == labels
    adversarial = boundary_blend(x, starts, labels, counter, steps=binary_steps + 2)
    for step in range(1, steps + 1):
        distance = (adversarial - x).flatten(1).norm(dim=1).clamp_min(1e-12)
        delta = (math.sqrt(d) * theta * distance).view(view)
        n_probe = int(min(max_gradient_queries, gradient_queries * math.sqrt(step)))
        if direction_fn is None:
            direction = _estimate_gradient(adversarial, labels, counter, n_probe, delta, bounds, generator,
                                           probe_resolution)
        else:
            direction = direction_fn(adversarial, labels)
            direction = direction / direction.flatten(1).norm(dim=1).clamp_min(1e-12).view(view)
        candidate = _geometric_step(adversarial, direction, distance / math.sqrt(step), labels, counter, bounds)
        adversarial = boundary_blend(x, candidate, labels, counter, steps=binary_steps)
    ok = (counter(adversarial) != labels) & ~bad_start
    adversarial = torch.where(ok.view(view), adversarial, torch.full_like(adversarial, math.nan))
    return AttackResult(adversarial, ok, counter.queries)


def _geometric_step(adversarial: Tensor, direction: Tensor, size: Tensor, labels: Tensor, label_fn: _CountingLabels,
                    bounds: tuple[Tensor | float, Tensor | float], tries: int = 10) -> Tensor:
    """HSJ's step: ``adversarial + size * direction`` (``[N, *shape]``, ``size`` ``[N]``), halving ``size``
    until the point is still adversarial, at most ``tries`` times (then the item stays where it is).
    Each try queries only the items still searching, so an item costs the tries it needs, not the
    slowest item's."""
    view = (-1,) + (1,) * (adversarial.dim() - 1)
    out = adversarial.clone()
    searching = torch.arange(len(adversarial), device=adversarial.device)
    size = size.clone()
    for _ in range(tries):
        if not len(searching):
            break
        trial = (adversarial[searching] + size[searching].view(view) * direction[searching]).clamp(*bounds)
        found = label_fn(trial) != labels[searching]
        out[searching[found]] = trial[found]
        size[searching[~found]] /= 2
        searching = searching[~found]
    return out


def _probes(n: int, n_probe: int, shape: tuple[int, ...], generator: torch.Generator, device: torch.device,
            dtype: torch.dtype, resolution: int | None) -> Tensor:
    """Gaussian probe directions ``[n, n_probe, *shape]`` (not normalised); with ``resolution`` r, drawn
    as ``[C, r, r]`` and upsampled bilinearly to ``shape`` = ``[C, H, W]``."""
    if resolution is None or tuple(shape[-2:]) == (resolution, resolution):
        return torch.randn((n, n_probe) + shape, generator=generator, device=device, dtype=dtype)
    low = torch.randn((n * n_probe, shape[0], resolution, resolution), generator=generator, device=device, dtype=dtype)
    up = torch.nn.functional.interpolate(low, size=tuple(shape[-2:]), mode="bilinear", align_corners=False)
    return up.view((n, n_probe) + shape)


def _estimate_gradient(boundary: Tensor, labels: Tensor, label_fn: _CountingLabels, n_probe: int,
                       delta: Tensor, bounds: tuple[float, float], generator: torch.Generator,
                       probe_resolution: int | None = None) -> Tensor:
    """Monte-Carlo sign estimate of the boundary normal at ``boundary`` ``[N, *shape]`` (unit L2)."""
    n = len(boundary)
    probes = _probes(n, n_probe, tuple(boundary.shape[1:]), generator, boundary.device, boundary.dtype,
                     probe_resolution)
    probes = probes / probes.flatten(2).norm(dim=2).view(n, n_probe, *([1] * (boundary.dim() - 1)))
    shifted = (boundary[:, None] + delta[:, None] * probes).clamp(*bounds)
    actual = (shifted - boundary[:, None]) / delta[:, None]
    decision = (label_fn(shifted.flatten(0, 1)).view(n, n_probe) != labels[:, None]).float() * 2 - 1
    baseline = decision.mean(1, keepdim=True)
    weights = decision - baseline  # variance reduction; all-same decisions fall back to the mean sign
    weights = torch.where((baseline.abs() == 1).expand_as(weights), decision, weights)
    gradient = (weights.view(n, n_probe, *([1] * (boundary.dim() - 1))) * actual).mean(1)
    return gradient / gradient.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *([1] * (boundary.dim() - 1)))


def foolbox_attack(x: Tensor, model: Any, method: str, steps: int, bounds: tuple[float, float] = (0.0, 1.0),
                   chunk: int = 256, **params: Any) -> AttackResult:
    """foolbox 3 ``BoundaryAttack`` / ``HopSkipJumpAttack`` on ``model`` (logits ``[B, K]``), in chunks.

    A chunk whose initialisation fails is retried item by item; items that still fail come back
    with ``ok = False`` and NaN rows.
    """
    import foolbox as fb  # foolbox: only the foolbox attacks need it

    attacks = {"boundary": lambda: fb.attacks.BoundaryAttack(steps=steps, **params),
               "hop_skip_jump": lambda: fb.attacks.HopSkipJumpAttack(steps=steps, **params)}
    require(method in attacks, f"unknown foolbox attack {method!r}; use one of {sorted(attacks)}")
    fmodel = fb.PyTorchModel(model.eval(), bounds=bounds)
    attack = attacks[method]()
    counter = _CountingLabels(lambda b: model(b).argmax(1))
    labels = counter(x)
    out = torch.full_like(x, math.nan)
    ok = torch.zeros(len(x), dtype=torch.bool)

    def run(index: Tensor) -> None:
        _, clipped, success = attack(fmodel, x[index], labels[index], epsilons=None)
        out[index] = torch.where(success.view(-1, *([1] * (x.dim() - 1))), clipped, out[index])
        ok[index] = success.cpu()

    for start in range(0, len(x), chunk):
        index = torch.arange(start, min(start + chunk, len(x)))
        try:
            run(index)
        except (ValueError, RuntimeError) as error:  # init failure for some item: isolate it
            log.warning("foolbox %s failed on a chunk (%s); retrying item by item", method, error)
            for i in index:
                try:
                    run(i.view(1))
                except (ValueError, RuntimeError):
                    pass
    return AttackResult(out, ok, counter.queries)
