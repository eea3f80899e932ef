"""The paper's RL examiner: per instance, an LSTM policy that emits one factor per step (100 bins
each), trained with REINFORCE; N independent policies run as one batched computation.

Each factor's range is cut into ``bins`` equal bins and a proposal is a bin's centre,
``u = (b + 1/2) / bins``. On a periodic factor (a circle) the same bins tile the circle evenly:
bin ``bins - 1`` (359.1-360 deg at 100 bins) borders bin 0 (0-0.9 deg) as any two neighbours do,
and a condition given back at the seam (``u = 1``, i.e. 360 deg) is the bin of 0 deg
(:func:`unit_to_bin`). The policy's categorical distribution over bins has no notion of
neighbourhood, so it treats both ends of a circle alike by construction.

The LSTM cell is written by hand with per-instance weights (``[N, ...]`` parameters and ``bmm``),
because ``torch.func.vmap`` does not support ``nn.LSTM``. Adam's update is elementwise, so one
optimiser over the stacked parameters trains N independent policies exactly.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor, nn

from advaudit.config import typed
from advaudit.core.adam import Adam
from advaudit.errors import require
from advaudit.examiners.protocol import HistoryMixin, periodic_dims
from advaudit.examiners.settings import RLExaminerConf


def unit_to_bin(u: Tensor, bins: int, periodic: Tensor) -> Tensor:
    """Bin index ``[..., C]`` of unit-cube points ``[..., C]``: ``floor(u * bins)``; on periodic dims
    ``u`` is taken modulo 1 first (``u = 1`` is ``u = 0``), on the others ``u = 1`` is the last bin."""
    u = torch.where(periodic.to(u.device), torch.remainder(u, 1.0), u)
    return (u * bins).long().clamp(0, bins - 1)


def circular_bin_distance(a: Tensor, b: Tensor, bins: int) -> Tensor:
    """Steps between bins ``a`` and ``b`` around a circle of ``bins`` bins."""
    diff = (a - b).abs() % bins
    return torch.minimum(diff, bins - diff)


class BatchedLSTMPolicy(nn.Module):
    """N autoregressive policies over C discretised factors.

    Shapes: embeddings ``[N, C, bins + 1, E]`` (the last row is the start token), LSTM weights
    ``[N, 4H, E]`` / ``[N, 4H, H]``, heads ``[N, C, bins, H]``.
    """

    def __init__(self, n_instances: int, n_dims: int, bins: int = 100, embedding: int = 30,
                 hidden: int = 30, lr: float = 1e-3, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        n, c, e, h = n_instances, n_dims, embedding, hidden
        k = hidden ** -0.5

        def uniform(*shape: int, scale: float) -> nn.Parameter:
            return nn.Parameter((torch.rand(*shape, generator=g) * 2 - 1) * scale)

        self.embed = nn.Parameter(torch.randn(n, c, bins + 1, e, generator=g) * 0.1)
        self.w_ih, self.w_hh = uniform(n, 4 * h, e, scale=k), uniform(n, 4 * h, h, scale=k)
        self.bias = uniform(n, 4 * h, scale=k)
        self.head_w, self.head_b = uniform(n, c, bins, h, scale=k), nn.Parameter(torch.zeros(n, c, bins))
        self.bins, self.hidden, self.lr = bins, hidden, lr

    def _cell(self, x: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        """One LSTM step for all policies: x ``[N, B, E]``, h/c ``[N, B, H]``."""
        gates = torch.bmm(x, self.w_ih.transpose(1, 2)) + torch.bmm(h, self.w_hh.transpose(1, 2)) + self.bias[:, None]
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def forward(self, batch: int, order: Sequence[int], choices: Tensor | None = None,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        """Sample (or score given ``choices``) ``batch`` candidates per policy.

        Returns bins ``[N, B, C]`` (in factor index order) and summed log-probabilities ``[N, B]``.
        """
        n = self.embed.shape[0]
        h = self.embed.new_zeros(n, batch, self.hidden)
        c = torch.zeros_like(h)
        previous = torch.full((n, batch), self.bins, dtype=torch.long, device=self.embed.device)
        previous_dim = order[0]
        out = torch.zeros(n, batch, len(order), dtype=torch.long, device=self.embed.device)
        log_prob = self.embed.new_zeros(n, batch)
        for dim in order:
            table = self.embed[:, previous_dim]  # [N, bins+1, E]
            x = torch.gather(table, 1, previous.unsqueeze(-1).expand(-1, -1, table.shape[-1]))
            h, c = self._cell(x, h, c)
            logits = torch.bmm(h, self.head_w[:, dim].transpose(1, 2)) + self.head_b[:, dim, None]
            logp = torch.log_softmax(logits, -1)
            if choices is None:
                pick = self._sample(logp.exp(), generator)
            else:
                pick = choices[:, :, dim]
            log_prob = log_prob + logp.gather(-1, pick.unsqueeze(-1)).squeeze(-1)
            out[:, :, dim] = pick
            previous, previous_dim = pick, dim
        return out, log_prob

    def _sample(self, probs: Tensor, generator: torch.Generator | None) -> Tensor:
        """One bin per row of ``probs`` ``[N, B, bins]`` -> ``[N, B]``, by inverse CDF: one uniform ``u`` per row
        (float64) and the first bin whose cumulative probability exceeds ``u`` times the row's total.

        One number per row, not one per bin (``torch.multinomial`` draws an exponential for every bin): the
        uniforms of all ``n_all`` policies cost little, so a shard's policies (``rows`` of ``n_all``) draw the
        whole examination's and keep their own rows: every instance's draws are those it gets in one job."""
        rows = getattr(self, "rows", None)
        u = torch.rand(getattr(self, "n_all", len(probs)), probs.shape[1], 1, generator=generator,
                       dtype=torch.float64, device=probs.device)
        if rows is not None:
            u = u[rows.to(probs.device)]
        cdf = probs.double().cumsum(-1)                                   # [N, B, bins]
        return torch.searchsorted(cdf, u * cdf[..., -1:], right=True).squeeze(-1).clamp_(max=self.bins - 1)

    def restrict(self, rows: Tensor) -> None:
        """Keep the policies at ``rows`` ``[n]`` of the N (a shard of an examination)."""
        self.n_all, self.rows = self.embed.shape[0], rows.clone()
        for name, parameter in list(self.named_parameters()):
            setattr(self, name, nn.Parameter(parameter.detach()[rows.to(parameter.device)].clone()))

    def training_step(self, batch: dict[str, Any], batch_idx: int = 0) -> Tensor:
        """REINFORCE loss for stored ``choices`` ``[N, B, C]`` with ``advantage`` ``[N, B]``."""
        _, log_prob = self(batch["choices"].shape[1], batch["order"], choices=batch["choices"])
        return -(batch["advantage"] * log_prob).mean(1).sum()

    def configure_optimizers(self) -> Adam:
        return Adam(self.parameters(), lr=self.lr)


BASELINES = ("ema", "batch_mean", "none")




class RLExaminer(HistoryMixin):
    """REINFORCE examiner (paper Section 2.2): ``q`` samples per policy update (paper: 32).

    The paper's gradient (Eq. 5) is ``1/B sum_b sum_c grad log P(psi^c | psi^{c-1:1}) R_b`` with no
    baseline; the reward here is the loss passed to :meth:`tell` (1 - true-class probability in
    weakness mode). ``baseline`` picks what is subtracted from ``R_b``:

    - ``none``: nothing (Eq. 5 as printed; with rewards in [0, 1] every sample's log-probability
      is pushed up, so the update's signal rides on a large common term);
    - ``batch_mean``: the mean reward of the same batch of q samples, per instance;
    - ``ema``: an exponential moving average of past batch means (``baseline_decay``), started at
      the first batch's mean (advaudit's earlier behaviour).

    Args:
        periodic: one flag per dim: which dims are circles (module docstring).
        settings: :class:`advaudit.examiners.settings.RLExaminerConf`'s fields, typed by it and taking its
            defaults (the baseline's chosen by measurement): among them ``order``, factor indices in
            sampling order (default 0..C-1; Section 4.5 compares orders), ``baseline`` (``ema`` |
            ``batch_mean`` | ``none``, see above) and ``baseline_decay``, the ``ema`` baseline's decay per update.
    """

    def __init__(self, n_instances: int, n_dims: int, seed: int = 0, device: str | torch.device = "cpu",
                 periodic: Sequence[bool] | None = None, **settings: Any) -> None:
        s = typed(RLExaminerConf, settings)  # the settings' defaults and types: RLExaminerConf
        q, bins, embedding, hidden, lr, order = s.q, s.bins, s.embedding, s.hidden, s.lr, s.order
        baseline, baseline_decay = str(getattr(s.baseline, "value", s.baseline)), s.baseline_decay
        self._init_history(n_instances, n_dims, q)
        self.periodic = periodic_dims(periodic, n_dims)
        self.order = list(order) if order is not None else list(range(n_dims))
        require(sorted(self.order) == list(range(n_dims)), f"order {self.order} must be a permutation of 0..{n_dims - 1}")
        self.policy = BatchedLSTMPolicy(n_instances, n_dims, bins, embedding, hidden, lr, seed).to(device)
        self.optimizer = self.policy.configure_optimizers()
        self.generator = torch.Generator(device=torch.device(device)).manual_seed(int(seed))
        require(baseline in BASELINES, f"examiner.baseline={baseline!r}; use one of {list(BASELINES)}")
        self.baseline_kind = baseline
        self.baseline = torch.zeros(n_instances, device=device)
        self.baseline_ready = False
        self.decay = float(baseline_decay)
        self.bins = bins
        self.pending: Tensor | None = None

    def ask(self) -> Tensor:
        with torch.no_grad():
            choices, _ = self.policy(self.q, self.order, generator=self.generator)
        self.pending = choices
        return ((choices.float() + 0.5) / self.bins).cpu()

    def tell(self, s: Tensor, loss: Tensor) -> None:
        """One policy update from ``loss`` ``[N, r]`` at ``s`` ``[N, r, C]``: ``r = q``, or ``r < q``
        on the last step of a budget that is not a multiple of q (the first r asked candidates)."""
        self._record(s, loss)
        reward = loss.to(self.baseline.device).float()
        r = reward.shape[1]
        if self.pending is not None:
            require(r <= self.pending.shape[1], f"tell got {r} candidates but only {self.pending.shape[1]} were asked")
            choices = self.pending[:, :r]
        else:
            choices = unit_to_bin(s, self.bins, self.periodic)
        batch_mean = reward.mean(1)
        if self.baseline_kind == "ema" and not self.baseline_ready:
            self.baseline, self.baseline_ready = batch_mean, True
        advantage = {"ema": lambda: reward - self.baseline[:, None],
                     "batch_mean": lambda: reward - batch_mean[:, None],
                     "none": lambda: reward}[self.baseline_kind]()
        batch = {"choices": choices.to(self.baseline.device), "order": self.order, "advantage": advantage}
        self.optimizer.zero_grad()
        self.policy.training_step(batch).backward()
        self.optimizer.step()
        if self.baseline_kind == "ema":
            self.baseline = self.decay * self.baseline + (1 - self.decay) * batch_mean
        self.pending = None

    def restrict(self, rows: Tensor) -> None:
        """Examine only the instances at ``rows`` ``[n]`` of the N (a shard of an examination): their
        policies, as initialised for all N, and their draws (:meth:`BatchedLSTMPolicy._sample`)."""
        require(self.pending is None and self.X.shape[1] == 0, "restrict an RL examiner before its first step")
        self._restrict_history(rows)
        self.policy.restrict(rows)
        self.optimizer = self.policy.configure_optimizers()
        self.baseline = self.baseline[rows.to(self.baseline.device)]

    def state_dict(self) -> dict[str, Any]:
        return {**self._history_state(), "policy": self.policy.state_dict(),
                "optimizer": self.optimizer.state_dict(), "rng": self.generator.get_state(),
                "baseline": self.baseline, "baseline_ready": self.baseline_ready}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        self.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["rng"])
        self.baseline, self.baseline_ready = state["baseline"], bool(state["baseline_ready"])
