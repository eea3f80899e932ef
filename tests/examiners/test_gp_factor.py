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
