"""The exact GP posterior BO reads, grown one observation at a time, and the kernel it rests on.

N independent Gaussian processes, one per instance, batched. With fixed hyperparameters (ARD
lengthscales ``l``, noise, constant mean ``m``) the Cholesky factor ``L`` of ``K + noise I`` only
*grows*: a new point ``x`` appends one row (``l_x = L^-1 k(X, x)``, ``d = sqrt(k(x, x) + noise -
|l_x|^2)``), O(n^2) per step instead of an O(n^3) refactorisation. :class:`GrowingFactor` keeps
``L^-1`` ``[N, n, n]`` (and ``L^-1 y``, ``L^-1 1``), so the posterior at candidates is one product
with ``L^-1``: ``mu = m + alpha^T v`` and ``sigma^2 = 1 - |v|^2`` with ``v = L^-1 k(X, x)``.

That product reproduces BoTorch's posterior only for the kernel it computes: the ARD RBF of
gpytorch's ``RBFKernel`` with unit prior variance (``k(x, x) = 1``, no ``ScaleKernel``), which is
BoTorch's default ``SingleTaskGP`` covariance module (``get_covar_module_with_dim_scaled_prior``)
in the versions advaudit supports. :func:`require_reproducible_gp` checks the installed BoTorch's
GP against that assumption (structure and, on probe points, values) and refuses a different one.

Periodic dims (the world's circles) are measured around the circle: each periodic coordinate
``u`` enters as its point on a circle of circumference 1, ``(cos 2 pi u, sin 2 pi u) / (2 pi)``,
under the factor's one lengthscale, so

    k(a, b) = exp(-1/2 [ sum_linear ((a_j - b_j) / l_j)^2 + sum_periodic (sin(pi (a_j - b_j)) / (pi l_j))^2 ])

(MacKay's periodic kernel with period 1; equal to the RBF for small differences).
:func:`circular_rbf_module` is BoTorch's default module with that distance and the default's priors.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch import Tensor

from advaudit.errors import AdvauditError

_JITTER = 1e-8
_PROBES = 3  # points per batch member on which a kernel's values are checked


def _capacity(n: int) -> int:
    """Buffer size for ``n`` points: 25% headroom (memory is N x capacity^2 float64)."""
    return n + max(64, n // 4)


@contextmanager
def denormals_flushed() -> Iterator[None]:
    """Float results below the smallest normal number (``1.2e-38`` in float32) count as zero inside the block.

    The acquisition's float32 kernel values of far-apart points (``exp(-88)`` and less) and the squares of
    tiny ``L^-1 k`` entries are such subnormal numbers, and a CPU computes with them many times slower:
    with them left in, one ask took 0.15 s instead of 0.05 s (10 instances, 500 observations, one thread).
    Zero instead of ``1e-39`` changes no UCB value that rounding would not. The CPU flag is per thread
    (the calling thread: with ``threads=1``, all of the acquisition), off again after the block."""
    flushing = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if flushing:
            torch.set_flush_denormal(False)


def scaled_features(x: Tensor, lengthscale: Tensor, periodic: Tensor | None = None) -> Tensor:
    """``x`` ``[..., d]`` divided by ``lengthscale`` (broadcastable to it), each periodic dim replaced by
    its point on a circle of circumference 1 divided by its lengthscale, ``(cos 2 pi u, sin 2 pi u) /
    (2 pi l)``: ``[..., d + p]``. The squared Euclidean distance of two feature vectors is then
    ``sum_linear ((a - b) / l)^2 + sum_periodic (sin(pi (a - b)) / (pi l))^2``."""
    if periodic is None or not bool(periodic.any()):
        return x / lengthscale
    mask = periodic.to(x.device)
    lengthscale = lengthscale.expand(*lengthscale.shape[:-1], x.shape[-1])
    angle = (2 * math.pi) * x[..., mask]
    radius = 1 / ((2 * math.pi) * lengthscale[..., mask])
    return torch.cat([x[..., ~mask] / lengthscale[..., ~mask], radius * torch.cos(angle), radius * torch.sin(angle)], -1)


def rbf_kernel(a: Tensor, b: Tensor, lengthscale: Tensor, periodic: Tensor | None = None) -> Tensor:
    """ARD RBF ``[N, n, m]`` between ``a`` ``[N, n, d]`` and ``b`` ``[N, m, d]`` (gpytorch's RBFKernel),
    lengthscale ``[N, 1, d]``; periodic dims measured around the circle (:func:`scaled_features`,
    the kernel of :func:`circular_rbf_module`). Without autograd the ``[N, n, m]`` passes run in place
    (the screen's elementwise work was a third of its time)."""
    a, b = scaled_features(a, lengthscale, periodic), scaled_features(b, lengthscale, periodic)
    squared = torch.baddbmm((a * a).sum(-1)[..., :, None], a, b.transpose(-1, -2), alpha=-2)
    if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
        return torch.exp(-0.5 * (squared + (b * b).sum(-1)[..., None, :]).clamp_min(0))  # no sqrt: finite gradients
    return squared.add_((b * b).sum(-1)[..., None, :]).clamp_min_(0).mul_(-0.5).exp_()


def circular_rbf_module(n_dims: int, batch_shape: torch.Size, periodic: Tensor):
    """BoTorch's default covariance module (ARD RBF with its dimension-scaled lengthscale prior and
    constraint, taken from ``get_covar_module_with_dim_scaled_prior``) with periodic dims measured
    around the circle; ``periodic`` ``[d]`` bool. Raises :class:`AdvauditError` if the installed
    BoTorch's default is not the kernel :class:`GrowingFactor` reproduces."""
    # BoTorch and GPyTorch: only the BO examiner needs them
    from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
    from gpytorch.kernels import RBFKernel
    from gpytorch.kernels.rbf_kernel import postprocess_rbf

    default = get_covar_module_with_dim_scaled_prior(ard_num_dims=n_dims, batch_shape=batch_shape)
    require_reproducible_kernel(default, n_dims)

    class CircularRBFKernel(RBFKernel):
        reproduced_by_growing_factor = True  # computes rbf_kernel(..., periodic), checked in tests

        def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params: Any) -> Tensor:
            f1, f2 = scaled_features(x1, self.lengthscale, periodic), scaled_features(x2, self.lengthscale, periodic)
            return postprocess_rbf(self.covar_dist(f1, f2, square_dist=True, diag=diag, **params))

    return CircularRBFKernel(ard_num_dims=n_dims, batch_shape=batch_shape, lengthscale_prior=default.lengthscale_prior,
                             lengthscale_constraint=default.raw_lengthscale_constraint)


def require_reproducible_kernel(covar_module: Any, n_dims: int) -> None:
    """Raise :class:`AdvauditError` unless ``covar_module`` computes the kernel :class:`GrowingFactor`
    reproduces: gpytorch's ``RBFKernel`` itself (or advaudit's circular RBF) over all ``n_dims``
    inputs with one lengthscale each, unit prior variance, and on probe points the values of
    :func:`rbf_kernel` at the module's lengthscales."""
    from gpytorch.kernels import RBFKernel  # GPyTorch: only the BO examiner needs it

    kind = type(covar_module).__name__
    own = getattr(type(covar_module), "reproduced_by_growing_factor", False)
    plain = isinstance(covar_module, RBFKernel) and type(covar_module).forward is RBFKernel.forward
    _require(plain or own, f"its covariance module is a {kind}")
    _require(covar_module.ard_num_dims == n_dims and covar_module.active_dims is None,
             f"its {kind} has ard_num_dims={covar_module.ard_num_dims} and active_dims={covar_module.active_dims} "
             f"for {n_dims} dims")
    if own:
        return
    lengthscale = covar_module.lengthscale.detach()
    batch = int(math.prod(covar_module.batch_shape))
    probe = torch.linspace(0.0, 1.0, _PROBES * n_dims, dtype=lengthscale.dtype, device=lengthscale.device)
    probe = probe.reshape(_PROBES, n_dims).expand(batch, _PROBES, n_dims).reshape(
        *covar_module.batch_shape, _PROBES, n_dims)
    with torch.no_grad():
        values = covar_module(probe, probe).to_dense().reshape(batch, _PROBES, _PROBES)
    expected = rbf_kernel(probe.reshape(batch, _PROBES, n_dims), probe.reshape(batch, _PROBES, n_dims),
                          lengthscale.reshape(batch, 1, n_dims))
    _require(torch.allclose(values, expected, rtol=1e-4, atol=1e-5),
             f"its {kind} differs from the ARD RBF with unit prior variance by up to "
             f"{float((values - expected).abs().max()):.3g} on probe points")


def require_reproducible_gp(model: Any, n_dims: int) -> None:
    """Raise :class:`AdvauditError` unless the BoTorch GP ``model`` is one :class:`GrowingFactor`
    reproduces: the kernel of :func:`require_reproducible_kernel`, a homoskedastic
    ``GaussianLikelihood`` (one noise per batch member), a ``ConstantMean`` and no input transform."""
    # GPyTorch: only the BO examiner needs it
    from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
    from gpytorch.means import ConstantMean

    require_reproducible_kernel(model.covar_module, n_dims)
    likelihood = model.likelihood
    _require(isinstance(likelihood, GaussianLikelihood) and not isinstance(likelihood, FixedNoiseGaussianLikelihood),
             f"its likelihood is a {type(likelihood).__name__}")
    _require(isinstance(model.mean_module, ConstantMean), f"its mean is a {type(model.mean_module).__name__}")
    _require(getattr(model, "input_transform", None) is None, "it transforms its inputs")


def _require(condition: bool, what: str) -> None:
    """One line naming the installed BoTorch and what of its GP breaks the grown factor's assumption."""
    if not condition:
        import botorch  # BoTorch: only the BO examiner needs it

        raise AdvauditError(f"BO's grown posterior assumes BoTorch's SingleTaskGP with an ARD RBF kernel of unit prior "
                            f"variance, but with the installed botorch {botorch.__version__} {what}; install a "
                            f"botorch whose default is that kernel, or use another examiner")


class GrowingFactor:
    """The inverse ``L^-1`` ``[N, n, n]`` of the Cholesky factor of ``K + noise I``, grown one point at a time.

    A refit factorises from scratch; between refits, buffers grow with 25% headroom, so appending a
    point costs amortised O(n^2) (one triangular product), and a block of ``b`` points about the same
    (:meth:`extend_to`). Alongside, ``L^-1 y`` and ``L^-1 1``
    ``[N, n]`` grow by one entry per point (O(n)), and a copy of ``L^-1`` and ``X`` in the
    acquisition's dtype is grown row by row. The factor is a function of the history and the refit
    points alone, so a resumed examiner rebuilds it bit for bit.
    """

    def __init__(self, n_instances: int, device: torch.device, acquisition_dtype: torch.dtype = torch.float32,
                 periodic: Tensor | None = None) -> None:
        self.n_instances, self.device, self.dtype = n_instances, device, acquisition_dtype
        self.periodic = periodic.to(device) if periodic is not None and bool(periodic.any()) else None
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
        inverse = torch.linalg.solve_triangular(L, eye.expand_as(L), upper=False)
        self._Linv[:, :n, :n], self._X[:, :n], self._Y[:, :n] = inverse, X, Y
        self._Linv_acq[:, :n, :n], self._X_acq[:, :n] = inverse.to(self.dtype), X.to(self.dtype)
        self._LinvY[:, :n] = (inverse @ Y.unsqueeze(-1)).squeeze(-1)
        self._Linv1[:, :n] = inverse.sum(-1)
        self.n = n

    def _grow(self, capacity: int, d: int) -> None:
        """Reallocate every buffer for ``capacity`` points of ``d`` factors, keeping the first ``n``."""
        n, N = self.n, self.n_instances
        for name, dtype, square in (("_Linv", torch.float64, True), ("_Linv_acq", self.dtype, True),
                                    ("_X", torch.float64, False), ("_X_acq", self.dtype, False),
                                    ("_Y", torch.float64, False), ("_LinvY", torch.float64, False),
                                    ("_Linv1", torch.float64, False)):
            shape = (N, capacity, capacity) if square else (N, capacity, d) if name.startswith("_X") else (N, capacity)
            old, new = getattr(self, name, None), torch.zeros(shape, dtype=dtype, device=self.device)
            if n:
                keep = (slice(None), slice(0, n), slice(0, n)) if square else (slice(None), slice(0, n))
                new[keep] = old[keep]
            setattr(self, name, new)

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
        """ARD RBF ``[N, n, m]`` between ``a`` ``[N, n, d]`` and ``b`` ``[N, m, d]`` in ``a``'s dtype."""
        return rbf_kernel(a, b, self.lengthscale.to(a.dtype), self.periodic)

    def extend_to(self, X: Tensor, Y: Tensor, block: int = 1) -> None:
        """Append the points of the history ``X`` ``[N, n', d]``, ``Y`` ``[N, n']`` (n' >= n) beyond the first ``n``,
        ``block`` points at a time (the last block may be shorter).

        A block of ``b`` points is one block-Cholesky step: with ``A = L^-1 k(X, X_b)`` ``[N, n, b]`` and
        ``L_s`` the factor of the Schur complement ``k(X_b, X_b) + noise I - A^T A``, the new rows of
        ``L^-1`` are ``[-L_s^-1 A^T L^-1, L_s^-1]``: two products with ``L^-1`` per block instead of two
        per point (the products are memory-bound, so ``b = q`` new points cost about as much as one).
        Exact: the same factor as ``b`` one-point steps, up to rounding. A block whose Schur complement is
        not positive definite (near-duplicate points) is appended one point at a time instead, where the
        pivot is floored at the jitter. The blocks start at the last refit and are ``block`` long, so a
        resumed examiner that replays the history with the same ``block`` rebuilds the factor bit for bit."""
        if self._X.shape[-1] != X.shape[-1]:
            self._grow(self._Linv.shape[1], X.shape[-1])
        while self.n < X.shape[1]:
            n, b = self.n, min(int(block), X.shape[1] - self.n)
            if n + b > self._Linv.shape[1]:
                self._grow(_capacity(n + b), X.shape[-1])
            x = X[:, n: n + b].to(self.device, torch.float64)    # [N, b, d]
            y = Y[:, n: n + b].to(self.device, torch.float64)    # [N, b]
            if b == 1 or not self._append_block(x, y):
                self._append_point(x[:, :1], y[:, 0])

    def _append_block(self, x: Tensor, y: Tensor) -> bool:
        """Append ``b`` points ``x`` ``[N, b, d]``, ``y`` ``[N, b]`` in one block-Cholesky step; False
        (nothing appended) if the Schur complement is not positive definite for some instance."""
        n, b = self.n, x.shape[1]
        A = self.inverse @ self.kernel(self.X, x)                                          # L^-1 k, [N, n, b]
        eye = torch.eye(b, dtype=torch.float64, device=self.device)
        schur = self.kernel(x, x) + (self.noise[:, None, None] + _JITTER) * eye - A.transpose(1, 2) @ A
        factor, info = torch.linalg.cholesky_ex(schur)
        if bool((info != 0).any()):
            return False
        corner = torch.linalg.solve_triangular(factor, eye.expand_as(factor), upper=False)  # L_s^-1, [N, b, b]
        rows = -(corner @ (A.transpose(1, 2) @ self.inverse))                             # [N, b, n]
        self._Linv[:, n: n + b, :n], self._Linv[:, n: n + b, n: n + b] = rows, corner
        self._Linv_acq[:, n: n + b, :n], self._Linv_acq[:, n: n + b, n: n + b] = rows.to(self.dtype), corner.to(self.dtype)
        self._LinvY[:, n: n + b] = (rows @ self.Y.unsqueeze(-1)).squeeze(-1) + (corner @ y.unsqueeze(-1)).squeeze(-1)
        self._Linv1[:, n: n + b] = rows.sum(-1) + corner.sum(-1)
        self._X[:, n: n + b], self._X_acq[:, n: n + b], self._Y[:, n: n + b] = x, x.to(self.dtype), y
        self.n = n + b
        return True

    def _append_point(self, x: Tensor, y: Tensor) -> None:
        """Append one point ``x`` ``[N, 1, d]``, ``y`` ``[N]`` (pivot floored at the jitter)."""
        i = self.n
        k = self.kernel(self.X, x).squeeze(-1)               # [N, i]
        l = (self.inverse @ k.unsqueeze(-1)).squeeze(-1)      # L^-1 k, [N, i]
        d = (1 + self.noise + _JITTER - (l * l).sum(-1)).clamp_min(_JITTER).sqrt()  # [N]
        row = -(l.unsqueeze(1) @ self.inverse).squeeze(1) / d[:, None]              # [N, i]
        self._Linv[:, i, :i], self._Linv[:, i, i] = row, 1 / d
        self._Linv_acq[:, i, :i], self._Linv_acq[:, i, i] = row.to(self.dtype), (1 / d).to(self.dtype)
        self._LinvY[:, i] = (row * self.Y).sum(-1) + y / d
        self._Linv1[:, i] = row.sum(-1) + 1 / d
        self._X[:, i], self._X_acq[:, i] = x.squeeze(1), x.squeeze(1).to(self.dtype)
        self._Y[:, i] = y
        self.n = i + 1

    def context(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """What UCB needs, in the acquisition dtype: ``X`` ``[N, n, d]``, ``L^-1`` ``[N, n, n]``,
        ``alpha = L^-1 (y_std - m)`` ``[N, n]`` and the constant mean ``m`` ``[N]``, with ``y``
        standardised per instance as BoTorch's ``Standardize`` does (``y_std = (y - c) / s``, so
        ``alpha = (L^-1 y - (c + m s) L^-1 1) / s``: O(n))."""
        Y, n = self.Y, self.n
        centre = Y.mean(1, keepdim=True)
        std = Y.std(1, keepdim=True) if n > 1 else torch.ones_like(Y[:, :1])
        std = torch.where(std >= 1e-8, std, torch.ones_like(std))
        alpha = (self._LinvY[:, :n] - (centre + self.mean[:, None] * std) * self._Linv1[:, :n]) / std
        return (self._X_acq[:, :n], self._Linv_acq[:, :n, :n], alpha.to(self.dtype), self.mean.to(self.dtype))
