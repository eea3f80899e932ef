"""Pseudo-model extraction for generalised adversarial distance (Algorithm 1 of the GAD paper).

A black box ``M_O`` only gives probabilities. We label a design (a Latin hypercube over the data's
per-feature ranges, via ``scipy.stats.qmc``; the unlabeled pool itself; or advaudit's
``neighbourhood`` design, pool items plus Gaussian jitter, for data with many features where a
hypercube almost never lands near the data) with ``M_O``'s
confidence for the class of interest and fit a DNN regressor ``M_P`` to it (MSE, Adam, shuffled
mini-batches: :func:`fit_pseudo_model`). ``M_P`` is differentiable, so its input gradient steers the attack
on ``M_O``.

Choices the paper leaves open (all in ``search.gad.pseudo_model``: :class:`advaudit.search.settings.PseudoModelConf`): the regressor is an MLP on inputs
standardised by the design's statistics with a sigmoid output (confidences lie in [0, 1]); the
paper's "5 dense layers" is the default depth; R^2 is measured on a held-out 10% of the design.
"""

from __future__ import annotations

import logging
from typing import Callable

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from advaudit.core.adam import Adam
from advaudit.errors import require
from advaudit.runtime import seed_everything
from advaudit.search.settings import Design, PseudoModelConf

log = logging.getLogger(__name__)


class PseudoModel(nn.Module):
    """MLP ``[B, *shape] -> [B]`` estimating the black box's class-of-interest confidence."""

    def __init__(self, input_shape: tuple[int, ...], hidden: list[int], mean: Tensor, std: Tensor,
                 lr: float = 1e-3) -> None:
        super().__init__()
        width = int(torch.tensor(input_shape).prod())
        layers: list[nn.Module] = [nn.Flatten()]
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)
        self.register_buffer("mean", mean.float())
        self.register_buffer("std", std.float().clamp_min(1e-8))
        self.lr = lr

    def logit(self, x: Tensor) -> Tensor:
        """``[B, *shape] -> [B]`` pre-sigmoid output (its gradient does not vanish when confident)."""
        return self.net((x - self.mean) / self.std).squeeze(1)

    def forward(self, x: Tensor) -> Tensor:
        return torch.sigmoid(self.logit(x))


def fit_pseudo_model(model: PseudoModel, loader: DataLoader, epochs: int) -> None:
    """Fit ``model`` in place: ``epochs`` passes over ``loader`` (``(x [b, *shape], c [b])`` batches), Adam at
    ``model.lr`` on the MSE of ``model(x)`` against ``c``. The steps of Lightning's automatic optimisation (no
    clipping, no accumulation, 32-bit) without its per-step machinery: a shard pays this fit before its GAD attack
    (docs/scaling-out.md), and the weights are the same to the bit (tests/search/test_pseudo_model.py)."""
    optimizer = Adam(model.parameters(), lr=model.lr)
    model.train()
    for _ in range(epochs):
        for x, c in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), c).backward()
            optimizer.step()


def latin_hypercube(low: Tensor, high: Tensor, n: int, seed: int) -> Tensor:
    """``[n, *shape]`` Latin hypercube design with each feature spanning ``[low, high]`` (``[*shape]``)."""
    from scipy.stats import qmc  # scipy.stats is slow to import; only this statistic needs it

    d = low.numel()
    unit = torch.from_numpy(qmc.LatinHypercube(d=d, seed=seed).random(n)).float()
    return (low.flatten() + unit * (high - low).flatten()).view(n, *low.shape)


def neighbourhood(data: Tensor, n: int, jitter: float, seed: int) -> Tensor:
    """``[n, *shape]``: random items of ``data`` plus Gaussian noise of std ``jitter * range``, in the data box."""
    generator = torch.Generator().manual_seed(seed)
    low, high = data.min(0).values, data.max(0).values
    picks = data[torch.randint(len(data), (n,), generator=generator)]
    noisy = picks + torch.randn(picks.shape, generator=generator) * jitter * (high - low)
    return torch.maximum(torch.minimum(noisy, high), low)


def r_squared(predicted: Tensor, actual: Tensor) -> float:
    """Coefficient of determination of ``predicted`` against ``actual`` (both ``[n]``)."""
    residual = ((actual - predicted) ** 2).sum()
    total = ((actual - actual.mean()) ** 2).sum().clamp_min(1e-12)
    return float(1 - residual / total)


def extract_pseudo_model(black_box: Callable[[Tensor], Tensor], data: Tensor, settings: PseudoModelConf,
                         known: Tensor | None = None) -> tuple[PseudoModel, float]:
    """Fit ``M_P`` to ``black_box`` (``[B, *shape] -> [B]`` confidence of the class of interest).

    Args:
        data: ``[n, *shape]`` representative unlabeled items: their per-feature ranges bound the
            Latin hypercube, or they are the design (``design="pool"``).
        known: ``[n]`` ``black_box(data)`` when the caller has it already (the audit predicted the split to find
            its eligible items): with ``design="pool"`` these are the labels, not asked again.
    Returns:
        The trained pseudo model (eval mode) and its R^2 on a held-out tenth of the design.
    """
    if settings.design == Design.lhs:
        design = latin_hypercube(data.min(0).values, data.max(0).values, settings.design_size, settings.seed)
    elif settings.design == Design.neighbourhood:
        design = neighbourhood(data, settings.design_size, settings.jitter, settings.seed)
    else:
        design = data
    if settings.design == Design.pool and known is not None:
        require(known.shape == data.shape[:1], f"known labels {list(known.shape)} for {len(data)} items")
        labels = known.float()
    else:
        with torch.no_grad():
            labels = torch.cat([black_box(design[i:i + 4096]) for i in range(0, len(design), 4096)]).float()
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.randperm(len(design), generator=generator)
    n_test = max(1, len(design) // 10)
    test, train = order[:n_test], order[n_test:]
    model = PseudoModel(tuple(data.shape[1:]), list(settings.hidden), design[train].mean(0), design[train].std(0),
                        lr=settings.lr)
    loader = DataLoader(TensorDataset(design[train], labels[train]), batch_size=settings.batch_size, shuffle=True,
                        generator=generator)
    seed_everything(settings.seed)  # the global streams as Lightning's seed_everything left them (nothing here reads them)
    fit_pseudo_model(model, loader, settings.epochs)
    model.eval()
    with torch.no_grad():
        score = r_squared(model(design[test]), labels[test])
    log.info("pseudo model: R^2 = %.3f on %d held-out design points", score, n_test)
    return model, score
