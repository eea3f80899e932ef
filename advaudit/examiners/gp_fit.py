"""Each instance's GP hyperparameters fitted alone, all instances at once: a batched L-BFGS.

BoTorch's ``fit_gpytorch_mll`` fits the ``batch_shape=[N]`` model of BO's N GPs with *one* L-BFGS-B
run over every instance's hyperparameters together. The hyperparameters themselves are per instance
(lengthscales ``[N, 1, d]``, noise ``[N, 1]``, constant mean ``[N]``) and so is the loss (the marginal
log likelihood of instance i, with its priors, depends on instance i's data and hyperparameters
only), but the optimiser is joint: one curvature history over the stacked vector, one line-search
step length, one stopping test and one iteration count for all of them. An instance's fitted
hyperparameters therefore depend on which other instances were fitted with it, and a shard of an
examination (:meth:`advaudit.examiners.bo.BOExaminer.restrict`) would not reproduce them.

:func:`fit_per_instance` runs N independent L-BFGS optimisations in lockstep instead: per instance its
own curvature pairs (``history``), its own backtracking (Armijo) line search, its own stopping test
(scipy's L-BFGS-B defaults: projected gradient ``<= 1e-5`` or relative decrease ``<= 2.2e-9``) and its
own iteration count (``maxiter``), and BoTorch's bounds on the hyperparameters (noise >= 1e-4 and lengthscales
>= 0.025 are bounds, not transforms, in BoTorch's default GP) kept by projecting each step onto them, with the
variables held at a bound left out of the direction, as L-BFGS-B does. Every evaluation is one batched forward and backward pass of the
model over all N instances (the loss is a sum of independent terms, so each instance's gradient is its
own term's), and an instance's trajectory reads only its own values: the fit of a subset of the
instances equals, to the bit, the fit of all of them restricted to that subset. It is the fit the
examiner paper's per-instance BO (bayes_opt, one scikit-learn GP per instance) did one instance at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

_C1 = 1e-4          # Armijo's sufficient-decrease constant
_BACKTRACKS = 20    # halvings of a step before an instance stops
_FTOL = 2.220446049250313e-09  # scipy L-BFGS-B's default factr * eps: relative decrease that ends a fit
_GTOL = 1e-5        # scipy L-BFGS-B's default: largest gradient entry that ends a fit
_CURVATURE = 1e-10  # a pair (s, y) with s.y below this is not kept (it would not keep H positive definite)
_MAX_STEP = 2.0     # largest change of one raw (softplus-space) hyperparameter in one step


#: what a trial point can make the model's evaluation raise (a factorisation that fails even with jitter)
_FACTORISATION_ERRORS = (NotPSDError, NanError, RuntimeError, ValueError)


@dataclass
class FitReport:
    """How the fit went, per instance ``[N]``: ``iterations``, the final ``loss`` (negative marginal log
    likelihood per point, with priors) and ``converged`` (stopped by a tolerance before ``maxiter``)."""

    iterations: Tensor
    loss: Tensor
    converged: Tensor


class _Batch:
    """The model's trainable parameters (every one batched ``[N, ...]``) as one matrix ``[N, P]``, with their
    bounds ``low``/``high`` ``[P]`` (BoTorch's, from the parameters' constraints)."""

    def __init__(self, model: Any, mll: Any) -> None:
        from botorch.optim.utils import get_parameters_and_bounds  # BoTorch: only the BO examiner needs it

        self.model, self.mll = model, mll
        named, bounds = get_parameters_and_bounds(model, requires_grad=True)
        self.params = list(named.values())
        self.n = int(self.params[0].shape[0])
        self.sizes = [p[0].numel() for p in self.params]
        low, high = [], []
        for name, size in zip(named, self.sizes):
            lo, hi = bounds.get(name, (None, None))
            low += [-torch.inf if lo is None else float(lo)] * size
            high += [torch.inf if hi is None else float(hi)] * size
        self.bound = torch.tensor(low, dtype=torch.float64)       # [P] lower bounds of the raw values
        self.logged = torch.isfinite(self.bound)                    # [P] searched as log(raw - bound)
        high_t = torch.tensor(high, dtype=torch.float64)
        gap = (high_t - self.bound.where(self.logged, torch.zeros_like(high_t)))
        self.low = torch.full_like(high_t, -torch.inf)
        self.high = torch.where(self.logged, gap.log(), high_t)    # an upper bound, where one is set

    def get(self) -> Tensor:
        """The search variables ``[N, P]``: the raw values, or ``log(raw - bound)`` where a lower bound is set."""
        raw = torch.cat([p.detach().reshape(self.n, -1) for p in self.params], 1).double()
        distance = (raw - self.bound.where(self.logged, torch.zeros_like(self.bound))).clamp_min(1e-12)
        return torch.where(self.logged, distance.log(), raw)

    def raw(self, theta: Tensor) -> Tensor:
        return torch.where(self.logged, self.bound.where(self.logged, torch.zeros_like(self.bound)) + theta.exp(), theta)

    def project(self, theta: Tensor) -> Tensor:
        return torch.maximum(torch.minimum(theta, self.high.to(theta)), self.low.to(theta))

    def set(self, theta: Tensor) -> None:
        with torch.no_grad():
            for p, part in zip(self.params, self.raw(theta).split(self.sizes, 1)):
                p.copy_(part.reshape(p.shape).to(p.dtype))
                p.grad = None

    def evaluate(self, theta: Tensor) -> tuple[Tensor, Tensor]:
        """Loss ``[N]`` (negative MLL of each instance) and its gradient ``[N, P]`` at ``theta`` ``[N, P]``."""
        self.set(theta)
        with torch.enable_grad():
            output = self.model(*self.model.train_inputs)
            loss = -self.mll(output, self.model.train_targets)
            loss.sum().backward()
        grad = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(self.n, -1)
                          for p in self.params], 1).double()
        grad = torch.where(self.logged, grad * theta.exp(), grad)  # d/d log(raw - bound) = (raw - bound) d/d raw
        return loss.detach().reshape(self.n).double(), grad

    def evaluate_trial(self, theta: Tensor, trial: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Loss ``[N]`` and gradient ``[N, P]`` with the instances in ``mask`` ``[N]`` at ``trial`` ``[N, P]`` and the
        others at ``theta`` (where the model is known to factorise). An instance whose trial point makes the
        factorisation fail gets an infinite loss: the failing ones are found by halving ``mask``, each
        evaluation over the whole batch, so no instance's values depend on which others failed."""
        try:
            return self.evaluate(torch.where(mask[:, None], trial, theta))
        except _FACTORISATION_ERRORS:
            failing = self._failing(theta, trial, mask)
        f, g = self.evaluate(torch.where((mask & ~failing)[:, None], trial, theta))
        return torch.where(failing, torch.full_like(f, torch.inf), f), g

    def _failing(self, theta: Tensor, trial: Tensor, mask: Tensor) -> Tensor:
        """``[N]`` bool: the instances of ``mask`` (whose trial points together make the evaluation raise) whose
        trial point alone does."""
        members = mask.nonzero().squeeze(1)
        if len(members) == 1:
            return mask.clone()
        found = torch.zeros_like(mask)
        for part in members.tensor_split(2):
            half = torch.zeros_like(mask).index_fill_(0, part, True)
            try:
                self.evaluate(torch.where(half[:, None], trial, theta))
            except _FACTORISATION_ERRORS:
                found |= self._failing(theta, trial, half)
        return found


class _Pairs:
    """Each instance's last ``m`` curvature pairs ``s``, ``y`` ``[N, m, P]`` (slot valid where ``rho > 0``)."""

    def __init__(self, n: int, m: int, size: int) -> None:
        self.S = torch.zeros(n, m, size, dtype=torch.float64)
        self.Y = torch.zeros_like(self.S)
        self.rho = torch.zeros(n, m, dtype=torch.float64)
        self.newest = torch.full((n,), -1, dtype=torch.long)   # slot written last, -1: none

    def forget(self, which: Tensor) -> None:
        self.rho[which], self.newest[which] = 0, -1

    def add(self, s: Tensor, y: Tensor, which: Tensor) -> None:
        """Keep the pair of the instances ``which`` ``[N]`` whose ``s.y`` keeps the inverse Hessian positive definite."""
        sy = (s * y).sum(1)
        keep = which & (sy > _CURVATURE)
        rows = keep.nonzero().squeeze(1)
        slot = (self.newest[rows] + 1) % self.S.shape[1]
        self.S[rows, slot], self.Y[rows, slot], self.rho[rows, slot] = s[rows], y[rows], 1 / sy[rows]
        self.newest[rows] = slot

    def direction(self, g: Tensor) -> Tensor:
        """L-BFGS's two-loop recursion per instance: ``-H g`` ``[N, P]``."""
        n, m, _ = self.S.shape
        rows = torch.arange(n)
        order = [(self.newest - k) % m for k in range(m)]      # newest first
        q, alphas = g.clone(), []
        for slot in order:
            a = self.rho[rows, slot] * (self.S[rows, slot] * q).sum(1)
            q = q - a[:, None] * self.Y[rows, slot]
            alphas.append(a)
        last = self.newest.clamp_min(0)
        s_new, y_new = self.S[rows, last], self.Y[rows, last]
        usable = (self.newest >= 0) & (self.rho[rows, last] > 0)
        gamma = torch.where(usable, (s_new * y_new).sum(1) / (y_new * y_new).sum(1).clamp_min(1e-300), torch.ones_like(q[:, 0]))
        r = gamma[:, None] * q
        for slot, a in zip(reversed(order), reversed(alphas)):
            b = self.rho[rows, slot] * (self.Y[rows, slot] * r).sum(1)
            r = r + (a - b)[:, None] * self.S[rows, slot]
        return -r


def _free(batch: _Batch, theta: Tensor, g: Tensor) -> Tensor:
    """``[N, P]`` bool: the variables not held at a bound by a gradient pushing out of the box."""
    at_low, at_high = theta <= batch.low.to(theta), theta >= batch.high.to(theta)
    return ~((at_low & (g > 0)) | (at_high & (g < 0)))


def _projected_gradient(batch: _Batch, theta: Tensor, g: Tensor) -> Tensor:
    """``[N]`` L-BFGS-B's stopping quantity: the largest entry of ``P(theta - g) - theta``."""
    return (batch.project(theta - g) - theta).abs().amax(1)


def fit_per_instance(model: Any, mll: Any, maxiter: int, history: int = 10) -> FitReport:
    """Fit the hyperparameters of the batched GP ``model`` (``batch_shape=[N]``) by minimising each
    instance's negative ``mll`` with its own L-BFGS (module docstring); the parameters are left at the
    fitted values. At most ``maxiter`` iterations per instance, ``history`` curvature pairs each."""
    model.train()
    batch = _Batch(model, mll)
    theta = batch.project(batch.get())
    f, g = batch.evaluate(theta)
    n = len(theta)
    pairs = _Pairs(n, history, theta.shape[1])
    iterations = torch.zeros(n, dtype=torch.long)
    active = torch.isfinite(f) & (_projected_gradient(batch, theta, g) > _GTOL) & (maxiter > 0)
    converged = ~active & torch.isfinite(f)
    while bool(active.any()):
        free = _free(batch, theta, g)
        d = pairs.direction(g * free) * free
        slope = (g * d).sum(1)
        reset = slope >= 0                                  # not a descent direction: forget the pairs, use -g
        pairs.forget(reset)
        d = torch.where(reset[:, None], -g * free, d)
        t = torch.where(pairs.newest < 0, (1 / d.abs().sum(1).clamp_min(1e-300)).clamp_max(1.0), torch.ones_like(f))
        t = torch.minimum(t, _MAX_STEP / d.abs().amax(1).clamp_min(1e-300))
        theta_new, f_new, g_new, accepted = _line_search(batch, theta, f, g, d, t, active)
        moved = active & accepted
        pairs.add(theta_new - theta, g_new - g, moved)
        iterations += moved.long()
        small = (f - f_new) / torch.maximum(torch.maximum(f.abs(), f_new.abs()), torch.ones_like(f)) <= _FTOL
        done_now = moved & (small | (_projected_gradient(batch, theta_new, g_new) <= _GTOL))
        theta = torch.where(moved[:, None], theta_new, theta)
        f, g = torch.where(moved, f_new, f), torch.where(moved[:, None], g_new, g)
        stuck = active & ~accepted                          # no decrease along d: as far as this fit goes
        converged |= done_now | stuck
        active &= ~(done_now | stuck | (iterations >= maxiter))
    batch.set(theta)  # leave the model's parameters at the fitted values
    return FitReport(iterations, f, converged)


def _line_search(batch: _Batch, theta: Tensor, f: Tensor, g: Tensor, d: Tensor, t: Tensor,
                 searching: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per instance, backtracking along the projected path ``P(theta + t d)`` until Armijo's sufficient decrease
    holds: the new point, loss, gradient and ``[N]`` whether a step was accepted (else the old values)."""
    searching = searching.clone()
    accepted = torch.zeros_like(searching)
    theta_new, f_new, g_new = theta.clone(), f.clone(), g.clone()
    for _ in range(_BACKTRACKS):
        trial = batch.project(theta + t[:, None] * d)
        f_try, g_try = batch.evaluate_trial(theta, trial, searching)
        decrease = f + _C1 * (g * (trial - theta)).sum(1)
        ok = searching & torch.isfinite(f_try) & torch.isfinite(g_try).all(1) & (f_try <= decrease)
        theta_new = torch.where(ok[:, None], trial, theta_new)
        f_new, g_new = torch.where(ok, f_try, f_new), torch.where(ok[:, None], g_try, g_new)
        accepted |= ok
        searching &= ~ok
        if not bool(searching.any()):
            break
        # the minimiser of the quadratic through f, the slope and f_try, kept within [t/10, t/2]
        along = (g * d).sum(1)
        curve = torch.nan_to_num(f_try - f - along * t, nan=torch.inf, posinf=torch.inf)
        guess = -along * t * t / (2 * curve.clamp_min(1e-300))
        t = torch.where(searching, torch.minimum(torch.maximum(guess, t / 10), t / 2), t)
    return theta_new, f_new, g_new, accepted
