"""The grown factor's kernel assumption is enforced against the installed BoTorch, not only assumed."""

from __future__ import annotations

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.examiners.bo import BOExaminer
from advaudit.examiners.gp_factor import require_reproducible_kernel

N, D = 3, 2


def _fed(**options) -> BOExaminer:
    """A BO examiner told 8 random observations, its posterior built (so its GP was constructed)."""
    examiner = BOExaminer(N, D, seed=1, fit_maxiter=3, **options)
    x = torch.rand(N, 8, D, generator=torch.Generator().manual_seed(2))
    examiner.tell(x.float(), torch.sin(4 * x).sum(-1))
    examiner._sync_posterior()
    return examiner


def _scaled_rbf(ard_num_dims: int, batch_shape: torch.Size | None = None, **_):
    from gpytorch.kernels import RBFKernel, ScaleKernel

    return ScaleKernel(RBFKernel(ard_num_dims=ard_num_dims, batch_shape=batch_shape), batch_shape=batch_shape)


def _matern(ard_num_dims: int, batch_shape: torch.Size | None = None, **_):
    from gpytorch.kernels import MaternKernel

    return MaternKernel(nu=2.5, ard_num_dims=ard_num_dims, batch_shape=batch_shape)


def test_botorchs_default_gp_is_the_one_the_factor_reproduces() -> None:
    from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior

    require_reproducible_kernel(get_covar_module_with_dim_scaled_prior(ard_num_dims=D, batch_shape=torch.Size([N])), D)
    assert _fed()._gp_checked and _fed(periodic=[True, False])._gp_checked


def test_a_scaled_kernel_as_botorchs_default_is_refused(monkeypatch) -> None:
    import botorch.models.gp_regression

    monkeypatch.setattr(botorch.models.gp_regression, "get_covar_module_with_dim_scaled_prior", _scaled_rbf)
    with pytest.raises(AdvauditError, match="RBF kernel of unit prior variance.*covariance module is a ScaleKernel"):
        _fed()


def test_a_matern_default_is_refused_for_the_periodic_kernel_too(monkeypatch) -> None:
    import botorch.models.utils.gpytorch_modules

    monkeypatch.setattr(botorch.models.utils.gpytorch_modules, "get_covar_module_with_dim_scaled_prior", _matern)
    with pytest.raises(AdvauditError, match="covariance module is a MaternKernel"):
        _fed(periodic=[True, False])


def test_an_rbf_of_other_values_is_refused(monkeypatch) -> None:
    from gpytorch.kernels import RBFKernel

    class TwiceRBF(RBFKernel):  # prior variance 2 under the RBF's name and structure
        def forward(self, x1, x2, **params):
            return 2 * super().forward(x1, x2, **params)

    with pytest.raises(AdvauditError, match="covariance module is a TwiceRBF"):
        require_reproducible_kernel(TwiceRBF(ard_num_dims=D, batch_shape=torch.Size([N])), D)
    with pytest.raises(AdvauditError, match="ard_num_dims=1"):
        require_reproducible_kernel(RBFKernel(ard_num_dims=1, batch_shape=torch.Size([N])), D)
    # a changed RBFKernel itself (as a new gpytorch could bring) is caught by its values on probe points
    original = RBFKernel.forward
    monkeypatch.setattr(RBFKernel, "forward", lambda self, x1, x2, **params: 2 * original(self, x1, x2, **params))
    with pytest.raises(AdvauditError, match="differs from the ARD RBF with unit prior variance by up to 1 "):
        require_reproducible_kernel(RBFKernel(ard_num_dims=D, batch_shape=torch.Size([N])), D)
    with pytest.raises(AdvauditError, match="differs from the ARD RBF"):
        _fed()


def test_a_block_of_points_grows_the_factor_a_fresh_factorisation_would_have(monkeypatch) -> None:
    """Blocks of 5 (the last one shorter) give the factor, L^-1 y and L^-1 1 of a fresh factorisation and of
    one-point steps, also with a duplicated point; a block whose Schur complement has no Cholesky factor is
    appended one point at a time."""
    from advaudit.examiners.gp_factor import GrowingFactor

    g = torch.Generator().manual_seed(5)
    X = torch.rand(N, 23, D, dtype=torch.float64, generator=g)
    X[:, 20] = X[:, 19]  # a duplicate inside a block
    Y = torch.sin(4 * X).sum(-1)
    hyper = (torch.full((N, 1, D), 0.3, dtype=torch.float64), torch.full((N,), 1e-4, dtype=torch.float64),
             torch.zeros(N, dtype=torch.float64))

    def grow(block: int) -> GrowingFactor:
        factor = GrowingFactor(N, torch.device("cpu"), torch.float64)
        factor.reset(*hyper, X[:, :4], Y[:, :4])
        factor.extend_to(X[:, :17], Y[:, :17], block=block)
        factor.extend_to(X, Y, block=block)
        return factor

    grown = {block: grow(block) for block in (1, 5)}
    fresh = GrowingFactor(N, torch.device("cpu"), torch.float64)
    fresh.reset(*hyper, X[:, :19], Y[:, :19])
    for factor in grown.values():
        assert factor.n == 23
        assert torch.allclose(factor.inverse[:, :19, :19], fresh.inverse, atol=1e-6)
        assert torch.allclose(factor._LinvY[:, :19], fresh._LinvY[:, :19], atol=1e-6)
        assert torch.allclose(factor._Linv1[:, :19], fresh._Linv1[:, :19], atol=1e-6)
    assert torch.allclose(grown[5].inverse, grown[1].inverse, rtol=1e-5, atol=1e-3)  # L^-1 ~ 1e2 after the duplicate
    assert torch.allclose(grown[5]._LinvY[:, :23], grown[1]._LinvY[:, :23], rtol=1e-5, atol=1e-3)

    failed = torch.linalg.cholesky_ex
    monkeypatch.setattr(torch.linalg, "cholesky_ex", lambda a: (a, torch.ones(a.shape[:-2], dtype=torch.int32)))
    pointwise = grow(5)
    monkeypatch.setattr(torch.linalg, "cholesky_ex", failed)
    assert torch.equal(pointwise.inverse, grown[1].inverse) and torch.equal(pointwise._LinvY, grown[1]._LinvY)
