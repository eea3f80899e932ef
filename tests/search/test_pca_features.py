"""The PCA projection of wide inputs (224-px images) through the Gram matrix equals the covariance route."""

from __future__ import annotations

import pytest
import torch

import advaudit.search.features as features


def test_the_gram_route_gives_the_covariance_routes_projection_up_to_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    g = torch.Generator().manual_seed(0)
    # 40 items in 60 dimensions with 5 strong directions (distinct variances) and a little noise
    x = (torch.randn(40, 5, generator=g) * torch.tensor([9.0, 7.0, 5.0, 3.0, 2.0])) @ torch.randn(5, 60, generator=g)
    x = x + 0.01 * torch.randn(40, 60, generator=g)
    covariance = features.pca_features(x.view(40, 3, 4, 5), components=4)
    monkeypatch.setattr(features, "COVARIANCE_MAX_DIMS", 10)
    gram = features.pca_features(x.view(40, 3, 4, 5), components=4)
    assert gram.shape == covariance.shape == (40, 4)
    signs = torch.sign((gram * covariance).sum(0))
    assert torch.allclose(gram * signs, covariance, atol=1e-4 * covariance.abs().max())
    assert torch.allclose(torch.cdist(gram, gram), torch.cdist(covariance, covariance), atol=1e-3)
