"""BO's incrementally grown posterior equals BoTorch's exact one, and a failed GP fit is loud."""

from __future__ import annotations

import logging

import pytest
import torch

from advaudit.examiners.bo import BOExaminer

N, D = 4, 3


def _fed(n_points: int, **options) -> BOExaminer:
    """A BO examiner told ``n_points`` random observations of a smooth objective, hyperparameters fitted."""
    examiner = BOExaminer(N, D, seed=1, **{"q": 1, **options})  # the paper's sequential GP-UCB unless told
    x = torch.rand(N, n_points, D, generator=torch.Generator().manual_seed(2))
    examiner.tell(x.float(), torch.sin(4 * x).sum(-1))
    examiner._sync_posterior()
    return examiner


def test_grown_factor_matches_a_fresh_factorisation_and_botorchs_posterior() -> None:
    examiner = _fed(12, fit_maxiter=5, acquisition_dtype="float64")
    extra = torch.rand(N, 9, D, generator=torch.Generator().manual_seed(3))
    for i in range(9):  # nine one-point extensions with fixed hyperparameters
        examiner.tell(extra[:, i: i + 1].float(), torch.sin(4 * extra[:, i: i + 1]).sum(-1))
        examiner._factor.extend_to(examiner.X, examiner.Y)
    grown = [t.clone() for t in examiner._factor.context()]
    examiner._factor.reset(*examiner._hyper_tensors(), examiner.X, examiner.Y)
    fresh = examiner._factor.context()
    assert all(torch.allclose(g, f, atol=1e-8) for g, f in zip(grown, fresh))  # X, L^-1, alpha, mean

    cand = torch.rand(N, 7, D, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    X, inverse, alpha, mean = fresh
    v = inverse @ examiner._factor.kernel(X, cand)
    mu, var = mean[:, None] + (alpha.unsqueeze(1) @ v).squeeze(1), 1 - (v ** 2).sum(1)
    model = examiner._gp(examiner.X, examiner.Y).eval()
    with torch.no_grad():
        posterior = model.posterior(cand)
    std, centre = examiner.Y.std(1, keepdim=True), examiner.Y.mean(1, keepdim=True)
    assert torch.allclose(mu * std + centre, posterior.mean.squeeze(-1), atol=1e-4)
    assert torch.allclose(var * std ** 2, posterior.variance.squeeze(-1), atol=1e-4)
    beta = examiner.beta.sqrt()
    assert torch.allclose(examiner._ucb(cand, fresh), mu + beta * var.sqrt(), atol=1e-10)


def test_a_failed_fit_warns_counts_and_keeps_the_warm_start(monkeypatch, caplog) -> None:
    examiner = _fed(10, fit_maxiter=5)
    before = {k: v.clone() for k, v in examiner.hyperparameters.items()}

    def broken(*args, **kwargs):
        raise RuntimeError("not positive definite")

    import botorch.fit

    monkeypatch.setattr(botorch.fit, "fit_gpytorch_mll", broken)
    examiner.tell(torch.rand(N, 1, D), torch.rand(N, 1, dtype=torch.float64))
    with caplog.at_level(logging.WARNING, logger="advaudit.examiners.bo"):
        examiner._fit()
    assert examiner.failed_fits == 1 and examiner.state_dict()["failed_fits"] == 1
    assert "4 instances" in caplog.text and "not positive definite" in caplog.text
    assert all(torch.equal(before[k], examiner.hyperparameters[k]) for k in before)
    u = examiner.ask()  # and the examination goes on
    assert u.shape == (N, 1, D)


def test_float32_acquisition_proposes_like_float64() -> None:
    proposals = {}
    for dtype in ("float64", "float32"):
        examiner = _fed(30, fit_maxiter=5, acquisition_dtype=dtype)
        proposals[dtype] = examiner.ask()
    assert (proposals["float64"] - proposals["float32"]).abs().max() < 0.05
    with pytest.raises(Exception, match="acquisition_dtype"):
        BOExaminer(N, D, acquisition_dtype="float16")


def test_local_refinement_climbs_the_acquisition_and_stays_in_the_cube() -> None:
    examiner = _fed(40, fit_maxiter=5)
    with torch.no_grad():
        context = examiner._factor.context()
        starts, start_values, _ = examiner._screen(context)
        x, values = examiner._refine_local(starts, start_values, context)
    assert bool((values >= start_values).all()) and float((values - start_values).sum()) > 0
    assert torch.allclose(values, examiner._ucb(x, context), atol=1e-3)  # the UCB of the points (float32)
    assert bool(((x >= 0) & (x <= 1)).all())
    assert set(examiner.seconds) == {"fit", "factor", "screen", "refine", "batch"} and examiner.seconds["fit"] > 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_bo_runs_its_gp_batch_on_cuda() -> None:
    examiner = _fed(12, fit_maxiter=5, device="cuda")
    assert examiner._factor.inverse.device.type == "cuda"
    u = examiner.ask()
    assert u.shape == (N, 1, D) and u.device.type == "cpu"
