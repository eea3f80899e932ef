"""The Lightning module that trains a :class:`TorchTarget` (optionally adversarially, with PGD)."""

from __future__ import annotations

from typing import Any, Callable

import pytorch_lightning as pl
import torch
import torchmetrics
from torch import Tensor

from advaudit.models.targets.target import TorchTarget


class ClassifierModule(pl.LightningModule):
    """Cross-entropy training of ``target``; logs ``train/loss``, ``train/acc``, ``val/acc``, ``test/acc``.

    Args:
        target: the model; trained on raw inputs (it normalises internally).
        optimizer: a partial ``(params) -> Optimizer`` (Hydra ``_partial_: true``).
        adversarial: ``None`` or PGD settings ``{norm: l2|linf, eps, steps, step_size}``: each
            training batch is replaced by its PGD adversarial (Madry et al.), inputs kept in [0, 1].
        max_epochs: used for the cosine learning-rate schedule.
    """

    def __init__(self, target: TorchTarget, optimizer: Callable[..., torch.optim.Optimizer],
                 adversarial: dict[str, Any] | None = None, max_epochs: int = 1) -> None:
        super().__init__()
        self.target = target
        self.optimizer_factory = optimizer
        self.adversarial = dict(adversarial) if adversarial else None
        self.max_epochs = max_epochs
        k = target.num_classes
        self.train_acc = torchmetrics.Accuracy(task="multiclass", num_classes=k)
        self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=k)
        self.test_acc = torchmetrics.Accuracy(task="multiclass", num_classes=k)

    def forward(self, x: Tensor) -> Tensor:
        return self.target.logits(x)

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y = batch
        if self.adversarial:
            x = pgd_attack(self.target, x, y, **self.adversarial)
        logits = self(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        self.train_acc(logits, y)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/acc", self.train_acc, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        x, y = batch
        logits = self(x)
        self.log("val/loss", torch.nn.functional.cross_entropy(logits, y))
        self.val_acc(logits, y)
        self.log("val/acc", self.val_acc, prog_bar=True)

    def test_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        x, y = batch
        self.test_acc(self(x), y)
        self.log("test/acc", self.test_acc)

    def configure_optimizers(self) -> Any:
        optimizer = self.optimizer_factory(params=self.parameters())
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, self.max_epochs))
        return {"optimizer": optimizer, "lr_scheduler": scheduler}


def pgd_attack(model: TorchTarget, x: Tensor, y: Tensor, eps: float, steps: int = 7,
               step_size: float | None = None, norm: str = "linf", random_start: bool = True) -> Tensor:
    """Untargeted PGD adversarials of ``x`` ``[B, C, H, W]`` within an ``eps`` ball, clipped to [0, 1].

    The model's train/eval mode is kept; gradients flow only into the perturbation.
    """
    step_size = step_size if step_size is not None else 2.5 * eps / steps
    was_training = model.training
    model.eval()
    delta = torch.zeros_like(x)
    if random_start:
        delta = (torch.rand_like(x) * 2 - 1) * eps if norm == "linf" else _project_l2(torch.randn_like(x), eps * 0.5)
    for _ in range(steps):
        delta.requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(model.logits((x + delta).clamp(0, 1)), y)
        (grad,) = torch.autograd.grad(loss, delta)
        with torch.no_grad():
            if norm == "linf":
                delta = (delta + step_size * grad.sign()).clamp(-eps, eps)
            else:
                g = grad.flatten(1)
                delta = delta + step_size * (g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)).view_as(x)
                delta = _project_l2(delta, eps)
    model.train(was_training)
    return (x + delta.detach()).clamp(0, 1)


def _project_l2(delta: Tensor, eps: float) -> Tensor:
    norms = delta.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *[1] * (delta.dim() - 1))
    return delta * (eps / norms).clamp(max=1.0)


def collect_logits(target: TorchTarget, loader: torch.utils.data.DataLoader) -> tuple[Tensor, Tensor]:
    """Uncalibrated logits ``[N, K]`` and labels ``[N]`` over a loader (no gradients, eval mode)."""
    target.eval()
    logits, labels = [], []
    with torch.no_grad():
        for x, y in loader:
            logits.append(target.logits(x.to(target.device)).cpu())
            labels.append(y)
    return torch.cat(logits), torch.cat(labels)
