"""The derived feature space of the papers: principal components of the inputs (pixels or columns).

Spread, clustering and meta-models work in it. The papers fit PCA on each evaluation set; advaudit
fits it once on all eligible items (the union of the pools), which keeps replications cheap and
gives every pool the same axes.
"""

from __future__ import annotations

import torch
from torch import Tensor


#: inputs wider than this (a 224-px image is 150,528 numbers: a 181 GB covariance) are projected through the
#: ``[n, n]`` Gram matrix of the items instead of the ``[D, D]`` covariance
COVARIANCE_MAX_DIMS = 4096


def pca_features(x: Tensor, components: int = 20) -> Tensor:
    """``[n, *shape] -> [n, min(components, D)]`` projection on the leading principal components
    (exact, deterministic: eigenvectors of the ``[D, D]`` covariance, or for ``D >``
    :data:`COVARIANCE_MAX_DIMS` of the ``[n, n]`` Gram matrix, whose eigenvector ``u_k`` times
    ``sqrt(lambda_k)`` is the same projection up to its sign; distances between items do not change)."""
    flat = x.flatten(1).double()
    centred = flat - flat.mean(0)
    q = min(components, centred.shape[1])
    if centred.shape[1] <= COVARIANCE_MAX_DIMS:
        _, vectors = torch.linalg.eigh(centred.T @ centred)
        return (centred @ vectors[:, -q:].flip(1)).float()
    values, vectors = torch.linalg.eigh(centred @ centred.T)
    q = min(q, len(values))
    return (vectors[:, -q:].flip(1) * values[-q:].flip(0).clamp_min(0).sqrt()).float()
