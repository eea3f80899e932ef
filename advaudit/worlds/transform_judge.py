"""Train a reference judge for TransformWorld: a classifier that saw the world's transforms as augmentation.

Every training batch is a fresh draw of real training images under uniformly random conditions of the
world's box (one batched :meth:`TransformWorld.render` per step), so the judge has seen the whole box
and names what a person would still name there. The temperature is fitted on the validation split
under random conditions of the same box (the views it will judge), and the result is an ordinary
advaudit ``target.pt`` (weights, class names, input shape, normalisation as plain data), loadable with
``weights_only`` like every target: ``audit.validity.reference=<target.pt>`` or ``audit.judge=...``.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from advaudit.models.targets.calibration import fit_temperature
from advaudit.models import save_target
from advaudit.models.nets import build_net
from advaudit.models.targets.target import TorchTarget
from advaudit.worlds.protocol import Instances
from advaudit.worlds.transforms import TransformWorld

log = logging.getLogger(__name__)

#: the packaged judge's architecture (a ResNet-18 of width 16); any other with ``arch``/``arch_params``
JUDGE_ARCH = "advaudit.models.nets.resnet18"
JUDGE_PARAMS: dict[str, Any] = {"width": 16}


def render_random(world: TransformWorld, images: Tensor, labels: Tensor, generator: torch.Generator) -> Tensor:
    """``images`` ``[B, C, H, W]`` each under one uniformly random condition of ``world``'s box -> ``[B, C, H, W]``."""
    z = Instances(images, labels, torch.arange(len(labels)))
    return world.render(z, world.random_conditions(len(labels), 1, generator=generator))


def augmented_logits(target: TorchTarget, world: TransformWorld, images: Tensor, labels: Tensor,
                     seed: int, batch_size: int = 1024) -> Tensor:
    """Logits ``[N, K]`` of ``target`` on ``images`` ``[N, C, H, W]`` under random conditions drawn with ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    outs = []
    with torch.no_grad():
        for start in range(0, len(labels), batch_size):
            chunk = slice(start, start + batch_size)
            outs.append(target.logits(render_random(world, images[chunk], labels[chunk], generator)))
    return torch.cat(outs)


def train_transform_judge(world: TransformWorld, out: str | Path, seed: int = 0, epochs: float = 2.0,
                          arch: str = JUDGE_ARCH, arch_params: dict[str, Any] | None = None,
                          batch_size: int = 128, lr: float = 0.002, budget_s: float | None = None) -> dict[str, Any]:
    """Train ``arch`` (a dotted path, default :data:`JUDGE_ARCH` with :data:`JUDGE_PARAMS`) on ``world``'s
    training images under fresh random conditions, ``epochs`` passes (fractions allowed), Adam with a
    one-cycle (cosine) schedule; save ``out`` (a target.pt). With ``budget_s`` the schedule runs on the
    wall clock instead (:func:`budget_lr`): training stops after ``budget_s`` seconds or ``epochs``,
    whichever comes first, and ``steps`` records how many it took.

    Returns its metrics: ``test/acc`` (clean), ``test/acc_box`` (random conditions of the box),
    ``temperature``, ``steps``, ``seconds``.
    """
    torch.manual_seed(seed)
    dm = world.datamodule
    train, val, test = dm.split("train"), dm.split("val"), dm.split("test")
    params = dict(JUDGE_PARAMS if arch_params is None and arch == JUDGE_ARCH else arch_params or {})
    net = build_net(arch, world.image_shape, len(world.class_names), **params)
    meta = {"arch": arch, "arch_params": params, "class_names": list(world.class_names),
            "input_shape": list(world.image_shape), "normalization": dm.normalization(), "kind": dm.kind,
            "dataset": dm.describe(), "config": {"recipe": "advaudit.worlds.transform_judge", "seed": seed,
                                                 "epochs": epochs, "factors": factor_bounds(world)}}
    target = TorchTarget(net, meta)
    steps = max(1, int(math.ceil(epochs * len(train.y) / batch_size)))
    optimizer = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    generator = torch.Generator().manual_seed(seed)
    started, taken = time.time(), 0
    target.train()
    for step in range(steps):
        if budget_s is not None:
            fraction = (time.time() - started) / budget_s
            if fraction >= 1:
                break
            for group in optimizer.param_groups:
                group["lr"] = budget_lr(lr, fraction)
        index = torch.randint(len(train.y), (batch_size,), generator=generator)
        x = render_random(world, train.x[index], train.y[index], generator)
        loss = F.cross_entropy(target.logits(x), train.y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if budget_s is None:
            schedule.step()
        taken += 1
        if step % 100 == 0:
            log.info("step %d/%d loss %.3f (%.0f s)", step, steps, float(loss.detach()), time.time() - started)
    target.eval()
    temperature = fit_temperature(augmented_logits(target, world, val.x, val.y, seed + 1), val.y)
    target.temperature.fill_(temperature)
    with torch.no_grad():
        clean = target.logits(test.x).argmax(1)
    box = augmented_logits(target, world, test.x, test.y, seed + 2).argmax(1)
    metrics = {"test/acc": float((clean == test.y).float().mean()), "test/acc_box": float((box == test.y).float().mean()),
               "temperature": float(temperature), "steps": taken,
               "seconds": round(time.time() - started, 1)}
    save_target(target, out, extra={"metrics": metrics})
    return metrics


def budget_lr(lr: float, fraction: float, warmup: float = 0.1) -> float:
    """One-cycle on the wall clock: linear warm-up to ``lr`` over the first ``warmup`` of the budget, then
    cosine down to ``lr / 1e4`` at ``fraction`` = 1 (``fraction``: the share of the budget spent)."""
    if fraction < warmup:
        return lr * (0.04 + 0.96 * fraction / warmup)
    return lr / 1e4 + (lr - lr / 1e4) * 0.5 * (1 + math.cos(math.pi * min(1.0, (fraction - warmup) / (1 - warmup))))


def factor_bounds(world: TransformWorld) -> dict[str, list[float]]:
    """The world's box as plain data ``{name: [low, high]}``."""
    return {f.name: [float(f.low), float(f.high)] for f in world.factors}
