"""The derived feature space of the papers: principal components of the inputs (pixels or columns).

Spread, clustering and meta-models work in it. The papers fit PCA on each evaluation set; advaudit
fits it once on all eligible items (the union of the pools), which keeps replications cheap and
gives every pool the same axes.
"""

from __future__ import annotations

import torch
from torch import Tensor


def pca_features(x: Tensor, components: int = 20) -> Tensor:
    """``[n, *shape] -> [n, min(components, D)]`` projection on the leading principal components
    (exact, deterministic: eigenvectors of the ``[D, D]`` covariance)."""
    flat = x.flatten(1).double()
    centred = flat - flat.mean(0)
    q = min(components, centred.shape[1])
    _, vectors = torch.linalg.eigh(centred.T @ centred)
    return (centred @ vectors[:, -q:].flip(1)).float()
