"""BO's q > 1 batches: GP-BUCB's picks equal a brute-force posterior with the picks hallucinated, and the examiner
proposes q distinct points per step, in the cube, resumably."""

from __future__ import annotations

import pytest
import torch

from advaudit.examiners.bo import BOExaminer
from advaudit.examiners.bo_batch import hallucinated_picks
from advaudit.examiners.gp_factor import denormals_flushed, rbf_kernel

N, D = 3, 2


def _brute_force_picks(X, y, pool, lengthscale, noise, beta, q):
    """GP-BUCB by refactorising: the mean from the real data only, the variance with the picks added as data."""
    def kernel(a, b):
        return rbf_kernel(a, b, lengthscale)

    eye = torch.eye(X.shape[1], dtype=X.dtype)
    K = kernel(X, X) + noise[:, None, None] * eye
    mu = (kernel(pool, X) @ torch.linalg.solve(K, y.unsqueeze(-1))).squeeze(-1)                  # [N, P]
    picks, taken = [], torch.zeros(pool.shape[:2], dtype=torch.bool)
    rows = torch.arange(X.shape[0])
    for _ in range(q):
        seen = torch.cat([X] + [pool[rows, p][:, None] for p in picks], 1)
        Ks = kernel(seen, seen) + noise[:, None, None] * torch.eye(seen.shape[1], dtype=X.dtype)
        k = kernel(seen, pool)
        var = 1 - (k * torch.linalg.solve(Ks, k)).sum(1)
        ucb = (mu + beta.sqrt() * var.clamp_min(1e-12).sqrt()).masked_fill(taken, -torch.inf)
        picks.append(ucb.argmax(1))
        taken[rows, picks[-1]] = True
    return torch.stack(picks, 1)


def test_hallucinated_picks_equal_a_refactorised_posterior() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(N, 8, D, generator=g, dtype=torch.float64)
    y = torch.sin(5 * X).sum(-1)
    pool = torch.rand(N, 60, D, generator=g, dtype=torch.float64)
    lengthscale = torch.full((N, 1, D), 0.3, dtype=torch.float64)
    noise, beta = torch.full((N,), 0.01, dtype=torch.float64), torch.full((N, 1), 4.0, dtype=torch.float64)
    L = torch.linalg.cholesky(rbf_kernel(X, X, lengthscale) + noise[:, None, None] * torch.eye(8, dtype=X.dtype))
    inverse = torch.linalg.inv(L)
    v = inverse @ rbf_kernel(X, pool, lengthscale)
    mu = ((inverse @ y.unsqueeze(-1)).transpose(1, 2) @ v).squeeze(1)
    var = 1 - (v * v).sum(1)
    picks = hallucinated_picks(mu, var, v, pool, noise, beta, 5, lambda a, b: rbf_kernel(a, b, lengthscale))
    assert torch.equal(picks, _brute_force_picks(X, y, pool, lengthscale, noise, beta, 5))
    assert all(len(set(row.tolist())) == 5 for row in picks)                     # no candidate twice
    assert torch.equal(picks[:, 0], (mu + 2 * var.sqrt()).argmax(1))             # the first is the UCB maximiser


def test_bo_with_q_proposes_distinct_points_in_the_cube_and_resumes() -> None:
    examiner = BOExaminer(N, D, seed=1, q=4, fit_maxiter=5)
    g = torch.Generator().manual_seed(2)
    for _ in range(4):
        u = examiner.ask()
        assert u.shape == (N, 4, D) and bool(((u >= 0) & (u <= 1)).all())
        examiner.tell(u, torch.sin(4 * u.double()).sum(-1) + 0.01 * torch.rand(N, 4, generator=g, dtype=torch.float64))
    assert all(len({tuple(p) for p in row.tolist()}) == 4 for row in u)
    assert examiner.X.shape[1] == 16 and int(examiner.restart_wins.sum()) > 0
    state = examiner.state_dict()
    twin = BOExaminer(N, D, seed=1, q=4, fit_maxiter=5)
    twin.load_state_dict(state)
    assert torch.equal(twin.ask(), examiner.ask())
    with pytest.raises(Exception, match="raw_samples"):
        BOExaminer(N, D, q=8, raw_samples=4)


def test_subnormal_results_are_zero_only_inside_the_block() -> None:
    a, b = torch.tensor([1e-20], dtype=torch.float32), torch.tensor([1e-19], dtype=torch.float32)
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormal floats")
    assert float(a * b * 1e21) > 0                # 1e-39: subnormal, kept
    with denormals_flushed():
        assert float(a * b * 1e21) == 0
    assert float(a * b * 1e21) > 0


def test_the_budget_warning_counts_the_random_first_step_of_q_queries() -> None:
    """With q = 8 the first step proposes 8 random points (n_init = 2 is reached within it): a budget of 8
    buys nothing but random points, one of 9 buys a GP-UCB batch."""
    from advaudit.examiners.settings import BOExaminerConf

    class Checks:  # the part of the validation context BOExaminerConf.check uses
        def __init__(self, budget: int) -> None:
            self.cfg, self.warnings = {"audit": {"budget": budget}}, []

        def warn(self, condition: bool, message: str) -> None:
            self.warnings += [message] if condition else []

        def require(self, condition: bool, message: str) -> None:
            assert condition, message

    def warned(q: int, budget: int) -> list[str]:
        checks = Checks(budget)
        BOExaminerConf.check({"n_init": 2, "q": q, "raw_samples": 256, "restarts": 4}, "examiner", checks)
        return checks.warnings

    assert warned(1, 2) and not warned(1, 3) and not warned(8, 9)
    assert "the 8 random initial queries" in warned(8, 8)[0]


def test_bo_batch_is_bo_with_the_measured_batch_settings(tmp_path) -> None:
    # catches: the one-word preset drifting from the settings docs/results/scale/performance.md measured, or
    # composing another examiner than BO
    from tests.conftest import compose_config
    batch = compose_config("examine", ["examiner=bo_batch"], tmp_path).examiner
    plain = compose_config("examine", ["examiner=bo"], tmp_path).examiner
    assert batch._target_ == plain._target_ and batch.name == plain.name
    changed = {k: batch[k] for k in batch if batch[k] != plain[k]}
    assert changed == {"q": 8, "fit_max_points": 64, "fit_maxiter": 20, "refit_growth": 1.6}
