"""Each instance's GP fitted by its own L-BFGS: a subset's fit is the whole's, the optimum is BoTorch's, and a
BO shard proposes what one job proposes for its instances."""

from __future__ import annotations

import warnings

import pytest
import torch

from advaudit.examiners import build_examiner
from advaudit.examiners.gp_fit import _Batch, fit_per_instance


def _data(n: int = 8, points: int = 24, dims: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(n, points, dims, dtype=torch.float64, generator=generator)
    scale = torch.rand(n, 1, 1, dtype=torch.float64, generator=generator) * 3
    y = (scale * x).sin().sum(-1) + 0.05 * torch.randn(n, points, dtype=torch.float64, generator=generator)
    return x, y


def _model(x: torch.Tensor, y: torch.Tensor):
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    model = SingleTaskGP(x, y.unsqueeze(-1), outcome_transform=Standardize(m=1, batch_shape=torch.Size([len(x)])))
    return model, ExactMarginalLogLikelihood(model.likelihood, model)


def _loss(model, mll) -> torch.Tensor:
    model.train()
    with torch.no_grad():
        return -mll(model(*model.train_inputs), model.train_targets)


def test_a_subset_of_the_instances_is_fitted_to_the_bit_as_in_the_whole_batch() -> None:
    x, y = _data()
    whole, mll = _model(x, y)
    report = fit_per_instance(whole, mll, maxiter=10)
    assert (report.iterations > 0).all()
    for rows in (torch.arange(0, 8, 3), torch.tensor([5])):
        part, part_mll = _model(x[rows], y[rows])
        fit_per_instance(part, part_mll, maxiter=10)
        fitted = dict(whole.named_parameters())
        for name, value in part.named_parameters():
            assert torch.equal(value, fitted[name][rows]), name


def test_each_instance_reaches_the_optimum_botorchs_joint_fit_reaches() -> None:
    from botorch.fit import fit_gpytorch_mll

    x, y = _data()
    start, start_mll = _model(x, y)
    before = _loss(start, start_mll)
    ours, mll = _model(x, y)
    report = fit_per_instance(ours, mll, maxiter=100)
    joint, joint_mll = _model(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(joint_mll, optimizer_kwargs={"options": {"maxiter": 100}})
    mine, theirs = _loss(ours, mll), _loss(joint, joint_mll)
    assert report.converged.all() and (mine < before).all()
    batch = _Batch(ours, mll)
    assert batch.evaluate(batch.get())[1].abs().max() < 1e-4  # each instance at a stationary point of its own loss
    # the marginal likelihood has several optima: most instances end at BoTorch's, none far above it
    assert (torch.isclose(mine, theirs, atol=1e-3).sum() >= 6) and (mine < theirs + 0.02).all()
    assert bool((ours.likelihood.noise >= 1e-4).all()) and bool((ours.covar_module.lengthscale >= 0.025).all())


@pytest.mark.parametrize("settings, periodic", [({"q": 1}, None),
                                                ({"q": 3, "refine": "adam", "adam_steps": 2}, [True, False, False])])
def test_a_bo_shard_proposes_what_the_whole_examination_proposes(settings: dict, periodic: list | None) -> None:
    def proposals(rows: torch.Tensor | None) -> torch.Tensor:
        examiner = build_examiner({"name": "bo", "fit": "per_instance", "n_init": 2, "refit_every": 2,
                                   "refit_growth": 1.0, "raw_samples": 24, "fit_maxiter": 8, **settings}, 7, 3,
                                  seed=3, periodic=periodic)
        if rows is not None:
            examiner.restrict(rows)
        asked = []
        for _ in range(5):
            u = examiner.ask()
            examiner.tell(u, (u * torch.tensor([1.0, 2.0, 0.5])).sum(-1).sin() + 0.2 * u[..., 1] ** 2)
            asked.append(u)
        assert examiner.n_fits >= 2
        return torch.cat(asked, 1)

    whole = proposals(None)
    for rows in (torch.arange(0, 7, 2), torch.arange(1, 7, 3)):
        assert torch.equal(proposals(rows), whole[rows])


def test_a_bo_shard_with_the_joint_fit_is_refused_in_one_line() -> None:
    examiner = build_examiner({"name": "bo"}, 4, 2, seed=0)
    with pytest.raises(Exception, match="examiner.fit=per_instance"):
        examiner.restrict(torch.tensor([0, 2]))
