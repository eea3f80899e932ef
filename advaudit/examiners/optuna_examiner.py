"""Optuna samplers (TPE, CMA-ES) as examiners: one study per instance, driven by ask/tell.

Optuna studies are inherently per-problem, so this examiner loops over instances in Python (the
documented exception to "no per-instance loops"); the renders and the forward pass stay batched.
On resume the studies are rebuilt from the recorded history (same trials, fresh sampler RNG).

Periodic dims (circles) are searched by wrapped sampling: the sampler sees such a dim over two
turns, ``v in [0, 2)``, and the proposal is ``u = v mod 1``. Optuna's samplers model an interval
(TPE's Parzen estimators and CMA-ES's Gaussian are cut at its ends), so on ``[0, 1]`` a region that
straddles the seam (350-10 deg) would be two regions at opposite ends; over two turns every region
of the circle, the straddling one included, has a copy in one piece (around ``v = 1``), and a
uniform ``v`` is a uniform ``u``, so the samplers' random start-up is unchanged.
"""

from __future__ import annotations

from typing import Any

import optuna
import torch
from torch import Tensor

from advaudit.config import typed
from advaudit.errors import AdvauditError
from advaudit.examiners.protocol import HistoryMixin, periodic_dims
from advaudit.examiners.settings import OptunaExaminerConf

TURNS = 2  # a periodic dim is sampled over this many turns (module docstring)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def make_sampler(name: str, seed: int) -> optuna.samplers.BaseSampler:
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=10)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=2, warn_independent_sampling=False)
    raise AdvauditError(f"unknown Optuna sampler {name!r}; use tpe or cmaes")


class OptunaExaminer(HistoryMixin):
    """ask/tell over ``N`` Optuna studies with sampler ``sampler`` (``tpe`` or ``cmaes``); the settings
    (``sampler``, ``q``) are :class:`~advaudit.examiners.settings.OptunaExaminerConf`'s fields."""

    def __init__(self, n_instances: int, n_dims: int, seed: int = 0, device: str | torch.device = "cpu",
                 periodic: Any = None, **settings: Any) -> None:
        s = typed(OptunaExaminerConf, settings)
        self._init_history(n_instances, n_dims, s.q)
        self.sampler_name, self.seed = s.sampler, int(seed)
        self.seeds = [self.seed + i for i in range(n_instances)]  # instance i's study: seed + i
        self.periodic = periodic_dims(periodic, n_dims)
        self.distributions = {f"x{i}": optuna.distributions.FloatDistribution(0.0, TURNS if wrap else 1.0)
                              for i, wrap in enumerate(self.periodic.tolist())}
        self._new_studies()
        self.pending: list[list[optuna.trial.Trial]] = []

    def _new_studies(self) -> None:
        self.studies = [optuna.create_study(direction="maximize", sampler=make_sampler(self.sampler_name, seed))
                        for seed in self.seeds]

    def restrict(self, rows: Tensor) -> None:
        """Examine only the instances at ``rows`` ``[n]`` (each study keeps its instance's seed)."""
        self._restrict_history(rows)
        self.seeds = [self.seeds[i] for i in rows.tolist()]
        self._new_studies()

    def ask(self) -> Tensor:
        self.pending = [[study.ask(self.distributions) for _ in range(self.q)] for study in self.studies]
        v = torch.tensor([[[t.params[f"x{i}"] for i in range(self.n_dims)] for t in trials]
                          for trials in self.pending], dtype=torch.float64)
        return torch.where(self.periodic, torch.remainder(v, 1.0), v).float()

    def tell(self, s: Tensor, loss: Tensor) -> None:
        self._record(s, loss)
        for study, trials, values in zip(self.studies, self.pending, loss.tolist()):
            for trial, value in zip(trials, values):
                study.tell(trial, value)
        self.pending = []

    def state_dict(self) -> dict[str, Any]:
        return self._history_state()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        self._new_studies()
        for study, xs, ys in zip(self.studies, self.X.tolist(), self.Y.tolist()):
            for x, y in zip(xs, ys):
                study.add_trial(optuna.trial.create_trial(
                    params={f"x{i}": v for i, v in enumerate(x)}, distributions=self.distributions, value=y))
