"""GP-UCB with BoTorch hyperparameters and an incrementally updated exact posterior.

N independent Gaussian processes, one per instance, batched. Hyperparameters (ARD RBF
lengthscales, noise, constant mean: BoTorch's ``SingleTaskGP`` defaults with their priors) are
fitted by ``fit_gpytorch_mll`` on a ``batch_shape=[N]`` model, warm-started from the previous fit,
every time the data has grown enough. Between refits the hyperparameters are fixed, so the
Cholesky factor ``L`` of ``K + noise I`` (and its inverse ``L^-1``) only *grows*: each new point
appends one row (``l = L^-1 k``, ``d = sqrt(k(x, x) + noise - |l|^2)``), O(n^2) per step instead of
the O(n^3) refactorisation and per-step model construction that dominated the cost before
(docs/RESULTS.md, "Performance (issue 15)").

Acquisition: UCB(x) = mu(x) + sqrt(beta) * sigma(x) in the standardised outcome space (the same
argmax as in the raw space), with ``mu = m + k^T a`` (``a = K^-1 (y - m)``) and
``sigma^2 = 1 - |L^-1 k|^2`` (RBF prior variance 1): one batched matmul per candidate set.
Sobol raw samples plus perturbations of each instance's best point pick ``restarts`` starts per
instance, Adam refines them, and the best restart is chosen *per instance*.
``beta = kappa^2``: bayes_opt's default kappa = 2.576 gives beta = 6.64.

Everything after the fit runs on ``device`` (history, factor, candidates); the factor is kept in
float64 (near-duplicate points make ``K`` ill-conditioned), and so is the posterior mean;
``acquisition_dtype`` (default float32) sets the dtype of the variance's O(n^2 R) product.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any

import torch
from torch import Tensor

from advaudit.examiners.protocol import HistoryMixin

log = logging.getLogger(__name__)

_HYPER_PREFIXES = ("covar_module.", "likelihood.", "mean_module.")
_JITTER = 1e-8
_DTYPES = {"float64": torch.float64, "float32": torch.float32}


class BOExaminer(HistoryMixin):
    """Batched GP-UCB (see module docstring).

    Args:
        n_instances, n_dims: problem sizes; ``q`` must be 1 (sequential GP-UCB as in the paper).
        beta: UCB exploration weight (scalar or per instance).
        n_init: random points before the first GP fit (the paper: 2).
        refit_every, refit_growth: refit hyperparameters (warm-started) once the data has grown by
            at least ``refit_every`` observations *and* by the factor ``refit_growth`` since the last
            fit (about 14 fits over 500 steps); in between, new points extend the Cholesky factor.
        fit_maxiter: L-BFGS iterations per refit.
        fit_max_points: hyperparameters are fitted on at most this many observations per instance
            (a random subset that always keeps the best point); the posterior always uses all.
        raw_samples, restarts, adam_steps, adam_lr: acquisition optimisation.
        acquisition_dtype: ``float32`` or ``float64`` for the variance's candidate product.
        seed: Sobol and initial-point seed.
        device: where the posterior and the acquisition run (``cuda`` batches the N GPs on a GPU).

    A refit that raises keeps the previous (warm-start) hyperparameters, logs a warning naming the
    instance count and the error, and is counted in ``failed_fits`` (saved in the state).
    """

    def __init__(self, n_instances: int, n_dims: int, q: int = 1, beta: float = 6.635776,
                 n_init: int = 2, refit_every: int = 10, refit_growth: float = 1.3, fit_maxiter: int = 40,
                 fit_max_points: int = 128,
                 raw_samples: int = 256, restarts: int = 4, adam_steps: int = 15, adam_lr: float = 0.03,
                 acquisition_dtype: str = "float32",
                 seed: int = 0, device: str | torch.device = "cpu", **_: Any) -> None:
        from advaudit.errors import require

        require(q == 1, f"BO proposes one point per step (q=1); got q={q}")
        require(n_init >= 1, f"n_init={n_init} must be >= 1")
        require(restarts >= 1 and raw_samples >= 1, f"restarts={restarts} and raw_samples={raw_samples} must be >= 1")
        require(acquisition_dtype in _DTYPES, f"acquisition_dtype={acquisition_dtype!r}; use one of {sorted(_DTYPES)}")
        self._init_history(n_instances, n_dims, 1)
        self.device = torch.device(device)
        self.beta = torch.as_tensor(beta, dtype=torch.float64).expand(n_instances).reshape(n_instances, 1)
        self.n_init, self.refit_every, self.fit_maxiter = int(n_init), int(refit_every), int(fit_maxiter)
        self.refit_growth, self.fit_max_points = float(refit_growth), int(fit_max_points)
        self.raw_samples, self.restarts = int(raw_samples), int(restarts)
        self.adam_steps, self.adam_lr = int(adam_steps), float(adam_lr)
        self.acquisition_dtype = _DTYPES[acquisition_dtype]
        self.seed = int(seed)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.hyperparameters: dict[str, Tensor] | None = None
        self.last_fit_size = 0
        self.n_fits = self.failed_fits = 0
        self.fit_seconds = 0.0
        self.restart_wins = torch.zeros(self.restarts, dtype=torch.long)  # which restart was chosen
        self._factor = _GrowingFactor(n_instances, self.device)

    # -- hyperparameters ---------------------------------------------------------------------------
    def _refit_due(self) -> bool:
        n = self.X.shape[1]
        return self.hyperparameters is None or n >= max(self.last_fit_size + self.refit_every,
                                                         self.last_fit_size * self.refit_growth)

    def _gp(self, X: Tensor, Y: Tensor):
        """A batched ``SingleTaskGP`` on ``X`` ``[N, n, d]``, ``Y`` ``[N, n]`` with the current hyperparameters."""
        from botorch.models import SingleTaskGP
        from botorch.models.transforms.outcome import Standardize

        model = SingleTaskGP(X.to(self.device), Y.to(self.device).unsqueeze(-1),
                             outcome_transform=Standardize(m=1, batch_shape=torch.Size([self.n_instances])))
        if self.hyperparameters is not None:
            model.load_state_dict(self.hyperparameters, strict=False)
        return model

    def _fit_subset(self) -> tuple[Tensor, Tensor]:
        """At most ``fit_max_points`` observations per instance, always including the best one."""
        n = self.X.shape[1]
        if n <= self.fit_max_points:
            return self.X, self.Y
        priority = torch.rand(self.n_instances, n, generator=self.generator, dtype=torch.float64)
        priority[torch.arange(self.n_instances), self.Y.argmax(1)] = 2.0
        index = priority.topk(self.fit_max_points, dim=1).indices
        return (self.X.gather(1, index.unsqueeze(-1).expand(-1, -1, self.n_dims)), self.Y.gather(1, index))

    def _fit(self) -> None:
        """Refit the hyperparameters (warm start); a failure keeps the previous ones, loudly."""
        from botorch.exceptions.warnings import OptimizationWarning
        from botorch.fit import fit_gpytorch_mll
        from gpytorch.mlls import ExactMarginalLogLikelihood

        start = time.perf_counter()
        model = self._gp(*self._fit_subset())
        before = _hyper_state(model)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        try:
            with warnings.catch_warnings():  # L-BFGS stopping at maxiter is expected with warm starts
                warnings.filterwarnings("ignore", category=OptimizationWarning)
                fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": self.fit_maxiter}})
            self.hyperparameters = _hyper_state(model)
        except Exception as error:  # noqa: BLE001 - any fit failure must keep the examination going
            self.failed_fits += 1
            self.hyperparameters = self.hyperparameters if self.hyperparameters is not None else before
            log.warning("BO: the GP hyperparameter fit for %d instances at n=%d failed (%s: %s); keeping the "
                        "warm-start hyperparameters (%d failed fits so far)", self.n_instances, self.X.shape[1],
                        type(error).__name__, error, self.failed_fits)
        self.fit_seconds += time.perf_counter() - start
        self.n_fits += 1

    def _hyper_tensors(self) -> tuple[Tensor, Tensor, Tensor]:
        """Lengthscales ``[N, 1, d]``, noise ``[N]``, constant mean ``[N]`` (standardised units), float64."""
        model = self._gp(self.X[:, :1], self.Y[:, :1])
        return (model.covar_module.lengthscale.detach().double(), model.likelihood.noise.detach().double().reshape(-1),
                model.mean_module.constant.detach().double().reshape(-1))

    def _sync_posterior(self) -> None:
        """Refit if due (then refactorise from scratch), else grow the factor by the new points."""
        if self._refit_due():
            self._fit()
            self.last_fit_size = self.X.shape[1]
            self._factor.reset(*self._hyper_tensors(), self.X, self.Y)
        self._factor.extend_to(self.X, self.Y)

    # -- acquisition --------------------------------------------------------------------------------
    def _ucb(self, cand: Tensor, context: tuple[Tensor, Tensor, Tensor, Tensor]) -> Tensor:
        """UCB ``[N, R]`` at candidates ``[N, R, d]`` (standardised outcome space); ``context`` from
        :meth:`_GrowingFactor.context`. The mean (``k^T a``, O(nR)) stays in float64; the variance's
        O(n^2 R) product ``L^-1 k`` runs in ``acquisition_dtype``."""
        X, inverse, a, mean = context
        k = self._factor.kernel(X, cand.to(X.dtype))               # [N, n, R] float64
        mu = mean[:, None] + (a.unsqueeze(1) @ k).squeeze(1)
        v = inverse @ k.to(inverse.dtype)                            # L^-1 k, [N, n, R]
        var = (1 - (v * v).sum(1)).clamp_min(1e-12)
        return mu + self.beta.to(X).sqrt() * var.to(mu.dtype).sqrt()

    def ask(self) -> Tensor:
        if self.X.shape[1] < self.n_init:
            return torch.rand(self.n_instances, 1, self.n_dims, generator=self.generator)
        from torch.quasirandom import SobolEngine

        self._sync_posterior()
        f = self._factor
        context = f.context(self.acquisition_dtype)
        rows = torch.arange(self.n_instances, device=self.device)
        with torch.no_grad():
            sobol = SobolEngine(self.n_dims, scramble=True,
                                seed=int(torch.randint(0, 2**31, (1,), generator=self.generator)))
            raw = sobol.draw(self.raw_samples).to(self.device, torch.float64).expand(self.n_instances, -1, -1)
            # also try perturbations of each instance's best point so far
            best = f.X[rows, f.Y.argmax(1)]
            noise = torch.randn(self.n_instances, 16, self.n_dims, generator=self.generator, dtype=torch.float64)
            local = (best[:, None] + 0.05 * noise.to(self.device)).clamp(0, 1)
            raw = torch.cat([raw, local], 1)
            values = self._ucb(raw, context)
            starts = raw.gather(1, values.topk(self.restarts, dim=1).indices.unsqueeze(-1).expand(-1, -1, self.n_dims))
        x = starts.clone().requires_grad_(True)
        optimizer = torch.optim.Adam([x], lr=self.adam_lr)
        for _ in range(self.adam_steps):
            optimizer.zero_grad()
            (-self._ucb(x, context).sum()).backward()
            optimizer.step()
            with torch.no_grad():
                x.clamp_(0, 1)
        with torch.no_grad():
            choice = self._ucb(x, context).argmax(1)  # best restart per instance
            self.restart_wins += torch.bincount(choice.cpu(), minlength=self.restarts)
            return x.detach()[rows, choice].unsqueeze(1).float().cpu()

    def tell(self, s: Tensor, loss: Tensor) -> None:
        self._record(s, loss)

    def state_dict(self) -> dict[str, Any]:
        return {**self._history_state(), "rng": self.generator.get_state(),
                "hyperparameters": self.hyperparameters, "last_fit_size": self.last_fit_size,
                "n_fits": self.n_fits, "failed_fits": self.failed_fits, "restart_wins": self.restart_wins.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        self.generator.set_state(state["rng"])
        self.hyperparameters = state["hyperparameters"]
        self.last_fit_size = int(state["last_fit_size"])
        self.n_fits, self.failed_fits = int(state.get("n_fits", 0)), int(state.get("failed_fits", 0))
        self.restart_wins = state.get("restart_wins", torch.zeros(self.restarts, dtype=torch.long)).clone()
        self._factor = _GrowingFactor(self.n_instances, self.device)
        if self.hyperparameters is not None:  # replay the factor exactly as it was grown
            self._factor.reset(*self._hyper_tensors(), self.X[:, : self.last_fit_size], self.Y[:, : self.last_fit_size])


def _hyper_state(model) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k.startswith(_HYPER_PREFIXES)}


def _capacity(n: int) -> int:
    """Buffer size for ``n`` points: 25% headroom (memory is N x capacity^2 float64)."""
    return n + max(64, n // 4)


class _GrowingFactor:
    """The inverse ``L^-1`` ``[N, n, n]`` of the Cholesky factor of ``K + noise I``, grown one point at a time.

    A refit factorises from scratch; between refits, buffers grow with 25% headroom, so appending a
    point costs amortised O(n^2) (one triangular product). The factor is a function of the history and the refit
    points alone, so a resumed examiner rebuilds it bit for bit.
    """

    def __init__(self, n_instances: int, device: torch.device) -> None:
        self.n_instances, self.device = n_instances, device
        self.n = 0

    def reset(self, lengthscale: Tensor, noise: Tensor, mean: Tensor, X: Tensor, Y: Tensor) -> None:
        """New hyperparameters: factorise the history ``X`` ``[N, n, d]``, ``Y`` ``[N, n]`` from scratch
        (one batched Cholesky, O(n^3), once per refit)."""
        self.lengthscale, self.noise, self.mean = (t.to(self.device) for t in (lengthscale, noise, mean))
        n = X.shape[1]
        self.n = 0
        self._grow(_capacity(n), X.shape[-1])
        X, Y = X.to(self.device, torch.float64), Y.to(self.device, torch.float64)
        eye = torch.eye(n, dtype=torch.float64, device=self.device)
        L = torch.linalg.cholesky(self.kernel(X, X) + (self.noise[:, None, None] + _JITTER) * eye)
        self._Linv[:, :n, :n] = torch.linalg.solve_triangular(L, eye.expand_as(L), upper=False)
        self._X[:, :n], self._Y[:, :n] = X, Y
        self.n = n

    def _grow(self, capacity: int, d: int) -> None:
        old = (self.n, getattr(self, "_Linv", None), getattr(self, "_X", None), getattr(self, "_Y", None))
        self._Linv = torch.zeros(self.n_instances, capacity, capacity, dtype=torch.float64, device=self.device)
        self._X = torch.zeros(self.n_instances, capacity, d, dtype=torch.float64, device=self.device)
        self._Y = torch.zeros(self.n_instances, capacity, dtype=torch.float64, device=self.device)
        n, Linv, X, Y = old
        if n:
            self._Linv[:, :n, :n], self._X[:, :n], self._Y[:, :n] = Linv[:, :n, :n], X[:, :n], Y[:, :n]

    @property
    def X(self) -> Tensor:
        return self._X[:, : self.n]

    @property
    def Y(self) -> Tensor:
        return self._Y[:, : self.n]

    @property
    def inverse(self) -> Tensor:
        return self._Linv[:, : self.n, : self.n]

    def kernel(self, a: Tensor, b: Tensor) -> Tensor:
        """ARD RBF ``[N, n, m]`` between ``a`` ``[N, n, d]`` and ``b`` ``[N, m, d]`` (gpytorch's RBFKernel)."""
        ls = self.lengthscale.to(a.dtype)
        a, b = a / ls, b / ls
        squared = (a * a).sum(-1)[..., :, None] + (b * b).sum(-1)[..., None, :] - 2 * a @ b.transpose(-1, -2)
        return torch.exp(-0.5 * squared.clamp_min(0))  # no sqrt: finite gradients at zero distance

    def extend_to(self, X: Tensor, Y: Tensor) -> None:
        """Append the points of the history ``X`` ``[N, n', d]``, ``Y`` ``[N, n']`` (n' >= n) beyond the first ``n``."""
        if self._X.shape[-1] != X.shape[-1]:
            self._grow(self._Linv.shape[1], X.shape[-1])
        for i in range(self.n, X.shape[1]):
            if i == self._Linv.shape[1]:
                self._grow(_capacity(i), X.shape[-1])
            x = X[:, i: i + 1].to(self.device, torch.float64)    # [N, 1, d]
            k = self.kernel(self.X, x).squeeze(-1)               # [N, i]
            l = (self.inverse @ k.unsqueeze(-1)).squeeze(-1)      # L^-1 k, [N, i]
            d = (1 + self.noise + _JITTER - (l * l).sum(-1)).clamp_min(_JITTER).sqrt()  # [N]
            self._Linv[:, i, :i] = -(l.unsqueeze(1) @ self.inverse).squeeze(1) / d[:, None]
            self._Linv[:, i, i] = 1 / d
            self._X[:, i] = x.squeeze(1)
            self._Y[:, i] = Y[:, i].to(self.device, torch.float64)
            self.n = i + 1

    def context(self, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """What UCB needs: ``X`` ``[N, n, d]``, ``L^-1`` ``[N, n, n]`` (in ``dtype``), ``a = K^-1 (y_std - m)``
        ``[N, n]`` and the constant mean ``m`` ``[N]``, with ``y`` standardised per instance as
        BoTorch's ``Standardize`` does."""
        Y = self.Y
        std = Y.std(1, keepdim=True) if Y.shape[1] > 1 else torch.ones_like(Y[:, :1])
        y = (Y - Y.mean(1, keepdim=True)) / torch.where(std >= 1e-8, std, torch.ones_like(std))
        inverse = self.inverse
        alpha = inverse @ (y - self.mean[:, None]).unsqueeze(-1)           # L^-1 (y - m)
        a = (inverse.transpose(1, 2) @ alpha).squeeze(-1)
        return self.X, inverse.to(dtype), a, self.mean
