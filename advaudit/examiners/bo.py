"""GP-UCB with BoTorch hyperparameters and an incrementally updated exact posterior.

N independent Gaussian processes, one per instance, batched. Hyperparameters (ARD RBF
lengthscales, noise, constant mean: BoTorch's ``SingleTaskGP`` defaults with their priors) are
fitted by ``fit_gpytorch_mll`` on a ``batch_shape=[N]`` model, warm-started from the previous fit,
every time the data has grown enough. Between refits the hyperparameters are fixed, so the
posterior comes from a Cholesky factor that only grows by one row per new point, O(n^2) per step
instead of the O(n^3) refactorisation and per-step model construction that dominated the cost
(:mod:`advaudit.examiners.gp_factor`: the factor, the kernel, and the check that the installed
BoTorch's GP is the one the factor reproduces). This module keeps the examiner: its history and
random state, when to refit, and the acquisition.

Acquisition: UCB(x) = mu(x) + sqrt(beta) * sigma(x) in the standardised outcome space (the same
argmax as in the raw space). With ``v = L^-1 k(X, x)`` and ``alpha = L^-1 (y - m)``, both terms come
from one product with ``L^-1``: ``mu = m + alpha^T v`` and ``sigma^2 = 1 - |v|^2`` (RBF prior
variance 1). ``alpha`` is kept up to date in O(n) per step (``L^-1 y`` and ``L^-1 1`` grow by one
entry; re-standardising ``y`` only rescales them), so nothing else touches all of ``L^-1``.
Sobol raw samples plus perturbations of each instance's best point pick ``restarts`` starts per
instance; ``refine`` improves each start and the best restart is chosen *per instance*:

- ``local`` (default): ``len(local_scales)`` rounds; in each, every start draws ``local_samples``
  Gaussian perturbations (std = scale x the GP's lengthscale per factor, at most 0.25) and moves
  to the best of them if it beats the start. One round is one product with ``L^-1`` for all
  candidates at once.
- ``adam``: ``adam_steps`` Adam steps on UCB (BoTorch's ``gen_candidates_torch`` idea).

Why ``local`` is the default (docs/results/scale/performance.md): on a CPU the product with
``L^-1`` ``[N, n, n]`` is memory-bound for a handful of candidates, so each Adam step (forward plus
backward: two full reads of ``L^-1``) costs about as much as screening 64 candidates, and 15 steps
were half of BO's time at n = 400. With 4 rounds x 24 the refinement gets as close to the UCB's
maximum as 15 Adam steps did (0.85 vs 0.84 of the possible improvement over the screened starts) at
half the time of a step.

``beta = kappa^2``: bayes_opt's default kappa = 2.576 gives beta = 6.64.

Periodic dims (the world's circles: ``periodic``) are searched as circles. The kernel measures
them around the circle (:func:`advaudit.examiners.gp_factor.circular_rbf_module`: MacKay's periodic
kernel with period 1, so 0.99 and 0.01 are as close as 0.01 and 0.03). The hyperparameters keep
BoTorch's priors (one lengthscale per factor). Every perturbation of a start (the screen's, the
local rounds', Adam's steps) wraps around periodic dims instead of stopping at the box's edge.
Without periodic dims the GP is BoTorch's default ``SingleTaskGP`` exactly.

Everything after the fit runs on ``device`` (history, factor, candidates). The factor is grown in
float64 (near-duplicate points make ``K`` ill-conditioned); the acquisition reads a copy of
``L^-1``, ``X`` and ``alpha`` in ``acquisition_dtype`` (default float32), grown alongside. The
acquisition runs with subnormal floats flushed to zero (:func:`~advaudit.examiners.gp_factor.denormals_flushed`:
far-apart points' kernel values made it ~3x slower on a CPU). ``seconds`` splits the examiner's time into
``fit``, ``factor`` (growing ``L^-1``), ``screen``, ``refine`` and ``batch``.

``q > 1`` proposes ``q`` points per step from one screen and refinement of ``max(restarts, q)``
starts: the UCB's maximiser, then GP-BUCB's picks (:mod:`advaudit.examiners.bo_batch`: the points
already chosen hallucinated as observed at their posterior mean). A step's GP work is then shared by
``q`` queries, and so are its render and forward pass over all instances.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Sequence

import torch
from torch import Tensor
from torch.quasirandom import SobolEngine

from advaudit.config import typed
from advaudit.errors import require
from advaudit.examiners.bo_batch import hallucinated_picks
from advaudit.examiners.gp_fit import fit_per_instance
from advaudit.examiners.gp_factor import (GrowingFactor, circular_rbf_module, denormals_flushed, rbf_kernel,
                                          require_reproducible_gp, scaled_features)
from advaudit.examiners.protocol import HistoryMixin, keep_in_space, periodic_dims
from advaudit.examiners.settings import BOExaminerConf, GPFit

__all__ = ["BOExaminer", "circular_rbf_module", "rbf_kernel", "scaled_features"]

log = logging.getLogger(__name__)

_HYPER_PREFIXES = ("covar_module.", "likelihood.", "mean_module.")
_DTYPES = {"float64": torch.float64, "float32": torch.float32}
_REFINE = ("local", "adam")
_MAX_LOCAL_STD = 0.25  # unit-cube cap on a local perturbation's std


class BOExaminer(HistoryMixin):
    """Batched GP-UCB (see module docstring).

    The settings (keyword arguments) are :class:`advaudit.examiners.settings.BOExaminerConf`'s fields, typed
    by it and taking its defaults (the one place they are declared, with their range rules).

    Args:
        n_instances, n_dims: problem sizes.
        q: proposals per step (1: sequential GP-UCB as in the paper; more: GP-BUCB batches, ``q <= raw_samples``).
        beta: UCB exploration weight.
        n_init: random points before the first GP fit (the paper: 2).
        refit_every, refit_growth: refit hyperparameters (warm-started) once the data has grown by
            at least ``refit_every`` observations *and* by the factor ``refit_growth`` since the last
            fit (about 14 fits over 500 steps); in between, new points extend the Cholesky factor.
        fit_maxiter: L-BFGS iterations per refit.
        fit_max_points: hyperparameters are fitted on at most this many observations per instance
            (a random subset that always keeps the best point); the posterior always uses all.
        raw_samples, restarts: Sobol screening points and the starts kept per instance.
        refine: ``local`` (rounds of perturbations, see module docstring) or ``adam``.
        local_scales, local_samples: ``local``: one round per scale (perturbation std in
            lengthscales), ``local_samples`` perturbations per start and round.
        adam_steps, adam_lr: ``adam``: gradient steps and learning rate.
        acquisition_dtype: ``float32`` or ``float64`` for the acquisition's copy of ``L^-1``.
        seed: Sobol and initial-point seed.
        device: where the posterior and the acquisition run (``cuda`` batches the N GPs on a GPU).
        periodic: one flag per dim: which dims are circles (see the module docstring).

    A refit that raises keeps the previous (warm-start) hyperparameters, logs a warning naming the
    instance count and the error, and is counted in ``failed_fits`` (saved in the state).
    """

    def __init__(self, n_instances: int, n_dims: int, seed: int = 0, device: str | torch.device = "cpu",
                 periodic: Sequence[bool] | None = None, **settings: Any) -> None:
        s = typed(BOExaminerConf, settings)  # the settings' defaults and types: BOExaminerConf
        q, beta, n_init, refit_every, refit_growth = s.q, s.beta, s.n_init, s.refit_every, s.refit_growth
        fit_maxiter, fit_max_points, raw_samples, restarts = s.fit_maxiter, s.fit_max_points, s.raw_samples, s.restarts
        refine, local_scales, local_samples, adam_steps = s.refine, s.local_scales, s.local_samples, s.adam_steps
        adam_lr, acquisition_dtype = s.adam_lr, s.acquisition_dtype
        self.fit = GPFit(s.fit).value
        require(q <= raw_samples, f"q={q} proposals per step need raw_samples >= q; got raw_samples={raw_samples}")
        require(acquisition_dtype in _DTYPES, f"acquisition_dtype={acquisition_dtype!r}; use one of {sorted(_DTYPES)}")
        require(refine in _REFINE, f"refine={refine!r}; use one of {list(_REFINE)}")
        require(all(float(x) > 0 for x in local_scales), f"local_scales={list(local_scales)} must be positive")
        self._init_history(n_instances, n_dims, q)
        self.device = torch.device(device)
        self.periodic = periodic_dims(periodic, n_dims)
        self.beta = torch.as_tensor(beta, dtype=torch.float64).expand(n_instances).reshape(n_instances, 1)
        self.n_init, self.refit_every, self.fit_maxiter = int(n_init), int(refit_every), int(fit_maxiter)
        self.refit_growth, self.fit_max_points = float(refit_growth), int(fit_max_points)
        self.raw_samples, self.restarts = int(raw_samples), int(restarts)
        self.starts = max(self.restarts, int(q))  # refined starts: q > 1 picks from at least q
        self.refine = refine
        self.local_scales, self.local_samples = tuple(float(x) for x in local_scales), int(local_samples)
        self.adam_steps, self.adam_lr = int(adam_steps), float(adam_lr)
        self.acquisition_dtype = _DTYPES[acquisition_dtype]
        self.seed = int(seed)
        self.generator = torch.Generator().manual_seed(self.seed)
        self.hyperparameters: dict[str, Tensor] | None = None
        self.last_fit_size = 0
        self.n_fits = self.failed_fits = 0
        self.seconds = {"fit": 0.0, "factor": 0.0, "screen": 0.0, "refine": 0.0, "batch": 0.0}
        self.restart_wins = torch.zeros(self.starts, dtype=torch.long)  # which refined start was chosen
        self._factor = GrowingFactor(n_instances, self.device, self.acquisition_dtype, self.periodic)
        self._gp_checked = False  # the installed BoTorch's GP is checked once, at the first GP built

    @property
    def fit_seconds(self) -> float:
        return self.seconds["fit"]

    # -- hyperparameters ---------------------------------------------------------------------------
    def _refit_due(self) -> bool:
        n = self.X.shape[1]
        return self.hyperparameters is None or n >= max(self.last_fit_size + self.refit_every,
                                                         self.last_fit_size * self.refit_growth)

    def _gp(self, X: Tensor, Y: Tensor):
        """A batched ``SingleTaskGP`` on ``X`` ``[N, n, d]``, ``Y`` ``[N, n]`` with the current hyperparameters.

        Raises :class:`~advaudit.errors.AdvauditError` if the installed BoTorch builds a GP that the
        grown factor does not reproduce (:func:`~advaudit.examiners.gp_factor.require_reproducible_gp`)."""
        from botorch.exceptions.warnings import InputDataWarning  # BoTorch: only the BO examiner needs it
        from botorch.models import SingleTaskGP
        from botorch.models.transforms.outcome import Standardize

        batch = torch.Size([self.n_instances])
        covar = circular_rbf_module(self.n_dims, batch, self.periodic) if bool(self.periodic.any()) else None
        with warnings.catch_warnings():  # a constant y (every proposal so far outside S, no loss) is expected
            warnings.filterwarnings("ignore", category=InputDataWarning)
            model = SingleTaskGP(X.to(self.device), Y.to(self.device).unsqueeze(-1), covar_module=covar,
                                 outcome_transform=Standardize(m=1, batch_shape=batch))
        if not self._gp_checked:
            require_reproducible_gp(model, self.n_dims)
            self._gp_checked = True
        if self.hyperparameters is not None:
            model.load_state_dict(self.hyperparameters, strict=False)
        return model

    def _fit_subset(self) -> tuple[Tensor, Tensor]:
        """At most ``fit_max_points`` observations per instance, always including the best one."""
        n = self.X.shape[1]
        if n <= self.fit_max_points:
            return self.X, self.Y
        priority = self._draw(torch.rand, n, dtype=torch.float64)
        priority[torch.arange(self.n_instances), self.Y.argmax(1)] = 2.0
        index = priority.topk(self.fit_max_points, dim=1).indices
        return (self.X.gather(1, index.unsqueeze(-1).expand(-1, -1, self.n_dims)), self.Y.gather(1, index))

    def _fit(self) -> None:
        """Refit the hyperparameters (warm start); a failure keeps the previous ones, loudly."""
        from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning  # BoTorch: only BO needs it
        from botorch.fit import fit_gpytorch_mll
        from gpytorch.mlls import ExactMarginalLogLikelihood

        start = time.perf_counter()
        model = self._gp(*self._fit_subset())
        before = _hyper_state(model)
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        try:
            with warnings.catch_warnings():  # L-BFGS stopping at maxiter is expected with warm starts
                warnings.filterwarnings("ignore", category=OptimizationWarning)
                # an instance whose proposals so far all lay outside S (audit.validity.in_loss=barrier: no loss) has
                # a constant y, which Standardize cannot scale to unit variance: expected, not a data problem
                warnings.filterwarnings("ignore", category=InputDataWarning)
                if self.fit == "per_instance":  # each instance's own L-BFGS: a shard fits as one job does
                    fit_per_instance(model, mll, self.fit_maxiter)
                else:
                    fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": self.fit_maxiter}})
            self.hyperparameters = _hyper_state(model)
        except Exception as error:  # noqa: BLE001 - any fit failure must keep the examination going
            self.failed_fits += 1
            self.hyperparameters = self.hyperparameters if self.hyperparameters is not None else before
            log.warning("BO: the GP hyperparameter fit for %d instances at n=%d failed (%s: %s); keeping the "
                        "warm-start hyperparameters (%d failed fits so far)", self.n_instances, self.X.shape[1],
                        type(error).__name__, error, self.failed_fits)
        self.seconds["fit"] += time.perf_counter() - start
        self.n_fits += 1

    def _hyper_tensors(self) -> tuple[Tensor, Tensor, Tensor]:
        """Lengthscales ``[N, 1, d]``, noise ``[N]``, constant mean ``[N]`` (standardised units), float64."""
        model = self._gp(self.X[:, :1], self.Y[:, :1])
        return (model.covar_module.lengthscale.detach().double(), model.likelihood.noise.detach().double().reshape(-1),
                model.mean_module.constant.detach().double().reshape(-1))

    def _sync_posterior(self) -> None:
        """Refit if due (then refactorise from scratch), else grow the factor by the new points, one block of
        ``q`` per step (:meth:`GrowingFactor.extend_to`; a resume replays the same blocks)."""
        if self._refit_due():
            self._fit()
            self.last_fit_size = self.X.shape[1]
            start = time.perf_counter()
            self._factor.reset(*self._hyper_tensors(), self.X, self.Y)
            self.seconds["factor"] += time.perf_counter() - start
        start = time.perf_counter()
        self._factor.extend_to(self.X, self.Y, block=self.q)
        self.seconds["factor"] += time.perf_counter() - start

    # -- acquisition --------------------------------------------------------------------------------
    def _posterior(self, cand: Tensor, context: tuple[Tensor, Tensor, Tensor, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """Mean and variance ``[N, R]`` (standardised outcome space) and ``v = L^-1 k(X, cand)`` ``[N, n, R]``
        at candidates ``[N, R, d]``, in the context's dtype; ``context`` from :meth:`GrowingFactor.context`.
        One product with ``L^-1``, O(n^2 R)."""
        X, inverse, alpha, mean = context
        k = self._factor.kernel(X, cand.to(X.dtype))                                               # [N, n, R]
        v = inverse @ k                                                                           # L^-1 k
        mu = mean[:, None] + (alpha.unsqueeze(1) @ v).squeeze(1)
        return mu, (1 - (v * v).sum(1)).clamp_min(1e-12), v

    def _ucb(self, cand: Tensor, context: tuple[Tensor, Tensor, Tensor, Tensor]) -> Tensor:
        """UCB ``[N, ...]`` at candidates ``[N, ..., d]`` (see :meth:`_posterior`)."""
        mu, var, _ = self._posterior(cand.reshape(self.n_instances, -1, self.n_dims), context)
        return self._ucb_of(mu, var).reshape(cand.shape[:-1])

    def _ucb_of(self, mu: Tensor, var: Tensor) -> Tensor:
        """``mu + sqrt(beta * var)`` ``[N, R]`` from a posterior's mean and variance ``[N, R]``."""
        return mu + self.beta.to(mu).sqrt() * var.sqrt()

    def _screen(self, context: tuple[Tensor, Tensor, Tensor, Tensor]) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
        """``starts`` starts ``[N, R, d]`` and their UCB ``[N, R]`` from Sobol points plus perturbations of
        each instance's best point, and that pool: its points ``[N, P, d]``, mean, variance ``[N, P]`` and
        ``L^-1 k`` ``[N, n, P]`` (what a batch's later proposals are picked from, :mod:`.bo_batch`)."""
        f, dtype = self._factor, context[0].dtype
        rows = torch.arange(self.n_instances, device=self.device)
        sobol = SobolEngine(self.n_dims, scramble=True, seed=int(torch.randint(0, 2**31, (1,), generator=self.generator)))
        raw = sobol.draw(self.raw_samples).to(self.device, dtype).expand(self.n_instances, -1, -1)
        best = f.X[rows, f.Y.argmax(1)].to(dtype)
        noise = self._draw(torch.randn, 16, self.n_dims, dtype=torch.float64)
        local = keep_in_space(best[:, None] + 0.05 * noise.to(self.device, dtype), self.periodic)
        raw = torch.cat([raw, local], 1)
        mu, var, v = self._posterior(raw, context)
        top = self._ucb_of(mu, var).topk(self.starts, dim=1)
        return raw.gather(1, top.indices.unsqueeze(-1).expand(-1, -1, self.n_dims)), top.values, (raw, mu, var, v)

    def _refine_local(self, x: Tensor, value: Tensor, context: tuple[Tensor, Tensor, Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """Per start ``x`` ``[N, R, d]`` (UCB ``value`` ``[N, R]``): one round per ``local_scales`` entry,
        moving to the best of ``local_samples`` perturbations when it is better. Returns both updated."""
        lengthscale = self._factor.lengthscale.to(x.dtype)[:, None]                      # [N, 1, 1, d]
        for scale in self.local_scales:
            noise = self._draw(torch.randn, x.shape[1], self.local_samples, self.n_dims,
                               dtype=torch.float64).to(self.device, x.dtype)
            step = (scale * lengthscale).clamp_max(_MAX_LOCAL_STD)
            cand = keep_in_space(x[:, :, None] + step * noise, self.periodic)            # [N, R, S, d]
            values = self._ucb(cand, context)                                            # [N, R, S]
            best, index = values.max(2)
            better = best > value
            x = torch.where(better[..., None], cand.gather(2, index[..., None, None].expand(-1, -1, 1, self.n_dims))
                            .squeeze(2), x)
            value = torch.where(better, best, value)
        return x, value

    def _refine_adam(self, x: Tensor, context: tuple[Tensor, Tensor, Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """``adam_steps`` Adam steps on UCB from each start ``x`` ``[N, R, d]``."""
        x = x.clone().requires_grad_(True)
        optimizer = torch.optim.Adam([x], lr=self.adam_lr)
        for _ in range(self.adam_steps):
            optimizer.zero_grad()
            with torch.enable_grad():
                (-self._ucb(x, context).sum()).backward()
            optimizer.step()
            with torch.no_grad():
                x.copy_(keep_in_space(x, self.periodic))
        x = x.detach()
        return x, self._ucb(x, context)

    def ask(self) -> Tensor:
        if self.X.shape[1] < self.n_init:
            return self._draw(torch.rand, self.q, self.n_dims)
        with denormals_flushed():
            self._sync_posterior()
            with torch.no_grad():
                return self._propose().float().cpu()

    def _propose(self) -> Tensor:
        """``q`` proposals ``[N, q, d]``: the refined UCB maximiser, then (``q > 1``) GP-BUCB's picks."""
        rows = torch.arange(self.n_instances, device=self.device)
        start = time.perf_counter()
        context = self._factor.context()
        x, value, pool = self._screen(context)
        self.seconds["screen"] += time.perf_counter() - start
        start = time.perf_counter()
        if self.refine == "local":
            x, value = self._refine_local(x, value, context)
        else:
            x, value = self._refine_adam(x, context)
        self.seconds["refine"] += time.perf_counter() - start
        if self.q == 1:
            choice = value.argmax(1)  # best restart per instance
            self.restart_wins += torch.bincount(choice.cpu(), minlength=self.starts)
            return x[rows, choice].unsqueeze(1)
        start = time.perf_counter()
        raw, mu, var, v = pool
        mu_x, var_x, v_x = self._posterior(x, context)
        points = torch.cat([x, raw], 1)
        picks = hallucinated_picks(torch.cat([mu_x, mu], 1), torch.cat([var_x, var], 1), torch.cat([v_x, v], 2),
                                   points, self._factor.noise, self.beta, self.q, self._factor.kernel)
        refined = picks[picks < self.starts]
        self.restart_wins += torch.bincount(refined.cpu(), minlength=self.starts)
        self.seconds["batch"] += time.perf_counter() - start
        return points.gather(1, picks.unsqueeze(-1).expand(-1, -1, self.n_dims))

    def tell(self, s: Tensor, loss: Tensor) -> None:
        self._record(s, loss)

    # -- shards -------------------------------------------------------------------------------------
    def restrict(self, rows: Tensor) -> None:
        """Examine only the instances at ``rows`` ``[n]`` of the N (a shard of an examination). Each instance
        then searches as in the whole examination: its random draws are made for all N and kept at its row,
        and with ``fit=per_instance`` its hyperparameters are fitted by its own L-BFGS
        (:mod:`advaudit.examiners.gp_fit`); the rest of BO (Sobol screen, factor, acquisition) is per instance."""
        require(self.fit == "per_instance", "examiner.fit=joint fits every instance's GP hyperparameters in one "
                "L-BFGS run, so a shard of the instances would not search as they do in one job; use "
                "examiner.fit=per_instance (in the one-job run too) or audit.shards=1")
        require(self.X.shape[1] == 0, "restrict a BO examiner before its first step")
        self._restrict_history(rows)
        self.beta = self.beta[rows]
        self._factor = GrowingFactor(self.n_instances, self.device, self.acquisition_dtype, self.periodic)

    def _draw(self, sample: Any, *shape: int, dtype: torch.dtype = torch.float32) -> Tensor:
        """``sample(N, *shape)`` (``torch.rand`` / ``torch.randn``) from the examiner's generator: drawn for every
        instance of the whole examination and kept at this examiner's rows when it examines a shard."""
        rows = getattr(self, "rows", None)
        drawn = sample(self.n_instances if rows is None else self.n_all, *shape, generator=self.generator, dtype=dtype)
        return drawn if rows is None else drawn[rows]

    def state_dict(self) -> dict[str, Any]:
        return {**self._history_state(), "rng": self.generator.get_state(),
                "hyperparameters": self.hyperparameters, "last_fit_size": self.last_fit_size,
                "n_fits": self.n_fits, "failed_fits": self.failed_fits, "restart_wins": self.restart_wins.clone(),
                "seconds": dict(self.seconds)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        self.generator.set_state(state["rng"])
        self.hyperparameters = state["hyperparameters"]
        self.last_fit_size = int(state["last_fit_size"])
        self.n_fits, self.failed_fits = int(state.get("n_fits", 0)), int(state.get("failed_fits", 0))
        self.restart_wins = state.get("restart_wins", torch.zeros(self.starts, dtype=torch.long)).clone()
        self.seconds.update(state.get("seconds", {}))
        self._factor = GrowingFactor(self.n_instances, self.device, self.acquisition_dtype, self.periodic)
        if self.hyperparameters is not None:  # replay the factor exactly as it was grown
            self._factor.reset(*self._hyper_tensors(), self.X[:, : self.last_fit_size], self.Y[:, : self.last_fit_size])


def _hyper_state(model) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k.startswith(_HYPER_PREFIXES)}
