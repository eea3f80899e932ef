"""Angles are circles: which factors are periodic, and every examiner searching them around the circle."""

from __future__ import annotations

import math

import pytest
import torch

from advaudit.audits.worst_case import ConditionSpace
from advaudit.examiners import build_examiner
from advaudit.examiners.bo import BOExaminer, circular_rbf_module, rbf_kernel
from advaudit.examiners.protocol import circular_difference, keep_in_space
from advaudit.examiners.rl import circular_bin_distance, unit_to_bin
from advaudit.worlds.protocol import Factor, configure_factors, periodic_mask
from advaudit.worlds.shapes.world import DEFAULT_FACTORS, TABLE1_FACTORS
from advaudit.worlds.transforms import COLOUR, GEOMETRIC

FULL_CIRCLES = {"sun_rot_x", "sun_rot_y", "sun_rot_z", "light_azimuth", "camera_roll"}


def test_full_turns_are_circles_and_narrowed_or_half_turns_are_not() -> None:
    for factors in (TABLE1_FACTORS, DEFAULT_FACTORS):
        assert {f.name for f in factors if f.periodic} == FULL_CIRCLES
    narrowed = configure_factors(DEFAULT_FACTORS, {"camera_roll": [0, 240], "camera_azimuth": [0, 360]})
    periodic = {f.name for f in narrowed if f.periodic}
    assert "camera_roll" not in periodic and "camera_azimuth" in periodic  # a widened half turn becomes one
    assert not any(f.periodic for f in GEOMETRIC + COLOUR)  # the transform world's defaults are small arcs
    wide = configure_factors(GEOMETRIC + COLOUR, {"rotation": [-180, 180], "hue": [-0.5, 0.5]})
    assert {f.name for f in wide if f.periodic} == {"rotation", "hue"}
    assert not Factor("x", 0, 720, "deg", 360.0).periodic  # two turns is not one circle


def test_the_audit_passes_the_searched_circles_to_the_examiner() -> None:
    space = ConditionSpace(list(DEFAULT_FACTORS), ["sun_rot_x", "sun_rot_y", "sun_rot_z"], 3,
                           torch.Generator().manual_seed(0))
    flags = dict(zip([f.name for f in space.free_factors], periodic_mask(space.free_factors)))
    assert [n for n, p in flags.items() if p] == ["light_azimuth", "camera_roll"]


def test_wrapping_and_circular_differences() -> None:
    periodic = torch.tensor([True, False])
    u = torch.tensor([[1.1, 1.1], [-0.05, -0.05], [1.0, 1.0]])
    assert torch.allclose(keep_in_space(u, periodic), torch.tensor([[0.1, 1.0], [0.95, 0.0], [0.0, 1.0]]), atol=1e-6)
    a, b = torch.tensor([359 / 360, 359 / 360]), torch.tensor([1 / 360, 1 / 360])
    assert torch.allclose(circular_difference(a, b, periodic), torch.tensor([2 / 360, 358 / 360]))


def _degrees(*values: float) -> torch.Tensor:
    return torch.tensor([[[v / 360, 0.5] for v in values]], dtype=torch.float64)


def test_bo_kernel_measures_angles_around_the_circle() -> None:
    periodic, lengthscale = torch.tensor([True, False]), torch.tensor([[[0.05, 0.3]]], dtype=torch.float64)
    across = rbf_kernel(_degrees(359), _degrees(1), lengthscale, periodic)
    inside = rbf_kernel(_degrees(1), _degrees(3), lengthscale, periodic)
    assert torch.allclose(across, inside) and float(inside) < 1 - 1e-4
    assert float(rbf_kernel(_degrees(359), _degrees(1), lengthscale)) < 1e-10  # the box sees two far edges
    # the GP module BoTorch fits computes the same kernel
    module = circular_rbf_module(2, torch.Size([1]), periodic).double()
    module.lengthscale = lengthscale
    points = _degrees(0, 90, 181, 359.5)
    assert torch.allclose(module(points, points).to_dense(), rbf_kernel(points, points, lengthscale, periodic))
    # MacKay's periodic kernel: exp(-2 sin^2(pi d) / (2 pi l)^2)
    d = 0.3
    expected = math.exp(-2 * math.sin(math.pi * d) ** 2 / (2 * math.pi * 0.05) ** 2)
    assert math.isclose(float(rbf_kernel(_degrees(0), _degrees(360 * d), lengthscale, periodic)), expected, rel_tol=1e-9)


def test_bo_periodic_gp_keeps_botorchs_priors_and_its_posterior() -> None:
    from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior

    default = get_covar_module_with_dim_scaled_prior(ard_num_dims=3, batch_shape=torch.Size([4]))
    ours = circular_rbf_module(3, torch.Size([4]), torch.tensor([True, False, True]))
    assert float(default.lengthscale_prior.loc) == float(ours.lengthscale_prior.loc)
    assert float(default.lengthscale_prior.scale) == float(ours.lengthscale_prior.scale)
    assert torch.allclose(default.lengthscale, ours.lengthscale)

    examiner = BOExaminer(4, 3, seed=1, fit_maxiter=5, acquisition_dtype="float64", periodic=[True, False, True])
    x = torch.rand(4, 15, 3, generator=torch.Generator().manual_seed(2))
    examiner.tell(x.float(), torch.cos(2 * math.pi * x[..., 0]) + x[..., 1])
    examiner._sync_posterior()
    X, inverse, alpha, mean = examiner._factor.context()
    cand = torch.rand(4, 7, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    v = inverse @ examiner._factor.kernel(X, cand)
    mu, var = mean[:, None] + (alpha.unsqueeze(1) @ v).squeeze(1), 1 - (v ** 2).sum(1)
    model = examiner._gp(examiner.X, examiner.Y).eval()
    with torch.no_grad():
        posterior = model.posterior(cand)
    std = examiner.Y.std(1, keepdim=True)
    centre = examiner.Y.mean(1, keepdim=True)
    assert torch.allclose(mu * std + centre, posterior.mean.squeeze(-1), atol=1e-5)
    assert torch.allclose(var * std ** 2, posterior.variance.squeeze(-1), rtol=1e-4, atol=1e-6)


def seam_bump(u: torch.Tensor) -> torch.Tensor:
    """``[N, q, 2] -> [N, q]``: a bump at the seam of dim 0 (0 = 360 deg) and the middle of dim 1."""
    d0 = torch.minimum(u[..., 0], 1 - u[..., 0])
    return torch.exp(-30 * (d0 ** 2 + (u[..., 1] - 0.5) ** 2))


@pytest.mark.parametrize("name", ["bo", "tpe", "cmaes"])
def test_examiners_concentrate_across_the_seam(name: str) -> None:
    """On a bump straddling 0/360 deg, the late proposals land on both sides of the seam, at more than
    1.5x the volume share (0.2) of the arc within 36 deg of it."""
    examiner = build_examiner({"name": name, "q": 1}, 4, 2, seed=0, periodic=[True, False])
    for _ in range(60):
        u = examiner.ask()
        assert bool(((u >= 0) & (u <= 1)).all())
        examiner.tell(u, seam_bump(u.double()))
    late = examiner.X[:, -20:, 0]
    near = torch.minimum(late, 1 - late) < 0.1
    assert float(near.double().mean()) > 0.3
    assert bool((late[near] < 0.5).any()) and bool((late[near] > 0.5).any())  # both sides of the seam
    assert float(examiner.Y.max(1).values.min()) > 0.8


def test_optuna_samples_circles_over_two_turns_and_resumes() -> None:
    examiner = build_examiner({"name": "tpe"}, 2, 2, seed=0, periodic=[True, False])
    assert examiner.distributions["x0"].high == 2.0 and examiner.distributions["x1"].high == 1.0
    for _ in range(12):
        u = examiner.ask()
        examiner.tell(u, seam_bump(u.double()))
    resumed = build_examiner({"name": "tpe"}, 2, 2, seed=0, periodic=[True, False])
    resumed.load_state_dict(examiner.state_dict())
    assert len(resumed.studies[0].trials) == 12
    assert resumed.ask().shape == (2, 1, 2)


def test_rl_bins_tile_the_circle() -> None:
    bins, periodic = 100, torch.tensor([True, False])
    u = torch.tensor([[359.9 / 360, 359.9 / 360], [0.0, 0.0], [1.0, 1.0]])
    index = unit_to_bin(u, bins, periodic)
    assert index[:, 0].tolist() == [99, 0, 0] and index[:, 1].tolist() == [99, 0, 99]
    assert int(circular_bin_distance(index[0, 0], index[1, 0], bins)) == 1  # 359.9 deg is next to 0 deg
    centres = (torch.arange(bins) + 0.5) / bins
    gaps = torch.remainder(centres.roll(-1) - centres, 1.0)  # includes the step from bin 99 over the seam to 0
    assert torch.allclose(gaps, torch.full((bins,), 1 / bins))
    examiner = build_examiner({"name": "rl", "q": 4}, 2, 2, seed=0, periodic=[True, False])
    examiner.tell(torch.tensor([[[1.0, 1.0]] * 4] * 2), torch.zeros(2, 4))  # told without asking
    assert examiner.periodic.tolist() == [True, False]


def test_report_averages_angles_on_the_circle() -> None:
    import numpy as np

    from advaudit.audits.worst_case_report import factor_summary

    roll = next(f for f in DEFAULT_FACTORS if f.name == "camera_roll")
    summary = factor_summary(np.array([350.0, 10.0, 355.0, 5.0]), roll)
    assert summary["circular"] and min(summary["mean"], 360 - summary["mean"]) < 1e-6 and summary["std"] < 10
    elevation = next(f for f in DEFAULT_FACTORS if f.name == "camera_elevation")
    assert factor_summary(np.array([-80.0, 80.0]), elevation)["mean"] == 0.0
