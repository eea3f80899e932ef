"""Models as a user outside advaudit would write them, named by tests' target blocks (``_target_``)."""

from __future__ import annotations

import numpy as np
import pytorch_lightning as pl
import torch
from torch import nn


class SmallNet(nn.Module):
    """A user's own CNN: ``[B, 1, 28, 28]`` -> logits ``[B, classes]``."""

    def __init__(self, classes: int = 10, width: int = 8) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(8 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


class DenseHeadCNN(nn.Module):
    """A user's own CNN with a dense head (no global pooling): ``[B, 1, 28, 28]`` -> logits ``[B, classes]``.

    Two conv blocks (``width``, ``2 * width`` channels, each halving the side), then the flattened
    ``[B, 2 * width * 7 * 7]`` map through a hidden dense layer of ``hidden`` units: where a pattern sits in the
    frame matters to it, as it does to many models users bring."""

    def __init__(self, classes: int = 10, width: int = 16, hidden: int = 128) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 7 * 7, hidden), nn.ReLU(),
                                  nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class LitNet(pl.LightningModule):
    """A user's LightningModule that holds its network as ``self.net`` (keys ``net.*`` in its .ckpt)."""

    def __init__(self, classes: int = 10, width: int = 8, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = SmallNet(classes, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def brightness_votes(x: np.ndarray) -> np.ndarray:
    """A prediction function: numpy images ``[B, 1, 28, 28]`` -> probabilities ``[B, 10]`` from mean brightness."""
    level = x.reshape(len(x), -1).mean(1)
    centres = np.linspace(0.05, 0.5, 10)
    scores = -((level[:, None] - centres[None]) ** 2) / 0.002
    scores -= scores.max(1, keepdims=True)
    return np.exp(scores) / np.exp(scores).sum(1, keepdims=True)


def scaled_votes(x: np.ndarray, sharpness: float = 1.0) -> np.ndarray:
    """:func:`brightness_votes` at another sharpness (a function with arguments, built with ``_partial_``)."""
    p = brightness_votes(x) ** sharpness
    return p / p.sum(1, keepdims=True)


def mostly_other(x: np.ndarray) -> np.ndarray:
    """A prediction function with 11 outputs on images ``[B, C, H, W]`` -> probabilities ``[B, 11]``: output ``j < 10``
    favours brightness level ``j``, and output 10 (outside any class map of 10 classes) takes most of the mass."""
    level = x.reshape(len(x), -1).mean(1)
    scores = np.concatenate([-((level[:, None] - np.linspace(0.05, 0.6, 10)[None]) ** 2) / 0.01,
                             np.full((len(x), 1), 1.5)], 1)
    scores -= scores.max(1, keepdims=True)
    return np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
