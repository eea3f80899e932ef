"""The examiners' settings (``conf/examiner/<name>.yaml`` names its dataclass here): each class's defaults."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional

from advaudit.config.part import Part
from advaudit.config.validation import Context, get
from advaudit.config.ranges import ranged

#: the constructor arguments the worst-case audit supplies to every examiner (never set in its config)
SUPPLIED = ("n_instances", "n_dims", "seed", "device", "periodic")
#: keys of an examiner block that are not constructor arguments: its label in reports (never passed)
LABELS = ("name",)


def query_budget(context: Context) -> int | None:
    """``audit.budget`` where it counts queries and is valid (>= 1; the audit's check names it otherwise)."""
    audit = context.cfg.get("audit")
    budget = get(audit, "budget")
    unit = str(get(audit, "budget_unit") or "queries")
    return budget if unit == "queries" and isinstance(budget, int) and budget >= 1 else None


class GPFit(str, Enum):
    joint = "joint"
    per_instance = "per_instance"


class RLBaseline(str, Enum):
    ema = "ema"
    batch_mean = "batch_mean"
    none = "none"


@dataclass
class RandomExaminerConf(Part):
    """``conf/examiner/random.yaml``: uniform random search (the standard protocol)."""

    config_group: ClassVar[str] = "examiner"
    config_path: ClassVar[str] = "examiner"
    schema_name: ClassVar[Optional[str]] = "random_schema"

    _target_: str = "advaudit.examiners.random_search.RandomExaminer"
    _partial_: bool = True  # the audit supplies n_instances, n_dims, seed, device, periodic
    name: str = "random"
    q: int = ranged(32, low=1, integer=True)  # candidates per instance per step


@dataclass
class OptunaExaminerConf(Part):
    """``conf/examiner/tpe.yaml``: Optuna TPE, one study per instance (ask/tell)."""

    config_group: ClassVar[str] = "examiner"
    config_path: ClassVar[str] = "examiner"
    schema_name: ClassVar[Optional[str]] = "optuna_schema"

    _target_: str = "advaudit.examiners.optuna_examiner.OptunaExaminer"
    _partial_: bool = True  # the audit supplies n_instances, n_dims, seed, device, periodic
    name: str = "tpe"
    sampler: str = "tpe"  # tpe | cmaes
    q: int = ranged(1, low=1, integer=True)


@dataclass
class CMAESExaminerConf(OptunaExaminerConf):
    """``conf/examiner/cmaes.yaml``: Optuna CMA-ES, one study per instance (ask/tell); needs the cmaes package."""

    schema_name: ClassVar[Optional[str]] = "cmaes_schema"

    name: str = "cmaes"
    sampler: str = "cmaes"


@dataclass
class BOExaminerConf(Part):
    """``conf/examiner/bo.yaml``: GP-UCB, one GP per instance batched in one BoTorch SingleTaskGP
    (``batch_shape=[N]``); :class:`advaudit.examiners.bo.BOExaminer` takes its defaults from here."""

    config_group: ClassVar[str] = "examiner"
    config_path: ClassVar[str] = "examiner"
    schema_name: ClassVar[Optional[str]] = "bo_schema"

    _target_: str = "advaudit.examiners.bo.BOExaminer"
    _partial_: bool = True  # the audit supplies n_instances, n_dims, seed, device, periodic
    name: str = "bo"
    q: int = ranged(1, low=1, integer=True)
    beta: float = ranged(6.635776, low=0, low_open=True)  # = kappa^2 with bayes_opt's kappa = 2.576
    n_init: int = ranged(2, low=1, integer=True)  # random points first (paper: 2)
    refit_every: int = ranged(10, low=1, integer=True)  # refit hyperparameters (warm-started) when the data grew by >= 10 points
    refit_growth: float = ranged(1.3, low=1)  # ... and by >= 30% since the last fit (~14 fits over 500 queries)
    fit_maxiter: int = ranged(40, low=1, integer=True)
    # joint: BoTorch's fit_gpytorch_mll, one L-BFGS-B run over every instance's hyperparameters together (an
    # instance's fit depends on the others); per_instance: each instance's own L-BFGS, batched
    # (advaudit.examiners.gp_fit), so a shard of the instances (audit.shards) searches as in one job
    fit: GPFit = GPFit.joint
    fit_max_points: int = ranged(128, low=1, integer=True)  # hyperparameters fitted on <= 128 points per instance (posterior uses all)
    raw_samples: int = ranged(256, low=1, integer=True)  # Sobol points screened per step (plus 16 around each instance's best point)
    restarts: int = ranged(4, low=1, integer=True)  # best screened points refined per instance
    adam_steps: int = ranged(15, low=0, integer=True)  # adam only
    adam_lr: float = ranged(0.03, learning_rate=True)  # adam only
    # float32 | float64: dtype of the acquisition's copy of L^-1 (the factor is grown in float64)
    acquisition_dtype: str = "float32"
    # local: rounds of perturbations (one product with L^-1 per round) | adam: gradient steps
    refine: str = "local"
    # local: one round per scale (perturbation std in GP lengthscales)
    local_scales: List[float] = field(default_factory=lambda: [0.4, 0.15, 0.05, 0.02])
    local_samples: int = ranged(24, low=1, integer=True)  # local: perturbations per start and round

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """``raw_samples >= restarts``; a warning where the budget buys no more than the random start."""
        raw, restarts = get(node, "raw_samples"), get(node, "restarts")
        if isinstance(raw, int) and isinstance(restarts, int):
            context.require(raw >= restarts, f"{path}.raw_samples={raw} < {path}.restarts={restarts}; "
                            f"set {path}.raw_samples>={restarts}")
        shards, fit = get(context.cfg.get("audit"), "shards"), get(node, "fit")
        context.require(not (isinstance(shards, int) and shards > 1 and fit == GPFit.joint.value),
                        f"audit.shards={shards} with {path}.fit=joint: the joint fit of every instance's GP "
                        f"hyperparameters would not be reproduced by a shard of the instances; set {path}.fit=per_instance "
                        "(in the one-job run you compare with too) or audit.shards=1")
        budget, n_init, q = query_budget(context), get(node, "n_init"), get(node, "q")
        if budget is not None and n_init is not None:
            q = q if isinstance(q, int) and q >= 1 else 1  # an invalid q is named by its range rule
            random_queries = -(-n_init // q) * q  # the first steps of q are random until n_init points are in
            context.warn(budget <= random_queries, f"audit.budget={budget} <= the {random_queries} random initial "
                         f"queries ({path}.n_init={n_init}, {path}.q={q}): BO only ever proposes random points")


@dataclass
class RLExaminerConf(Part):
    """``conf/examiner/rl.yaml``: LSTM policy + REINFORCE (paper: 100 bins, embedding 30, hidden 30, Adam
    1e-3, batch 32); one policy update per q queries: the paper's "T iterations" = T updates = q*T queries.

    Defaults: q = 16 and lr 0.03, so the policy moves within advaudit's default budget of 500 queries (31
    updates). At the paper's q = 32 and lr 0.001 the same budget is 16 updates, and on a user's Fashion-MNIST
    CNN in world=transforms E_T inside S moved -0.066 [-0.141, +0.000] from T = 0 (p 0.14: it measured the model
    under random conditions); at q = 16, lr 0.03 it moved -0.415 [-0.499, -0.330] (p 3.7e-08) and -0.466 on the
    colour-jittered recipe, without reaching the floor (E_T inside S 0.14 and 0.11; q = 8 at lr 0.03 reaches
    0.066: docs/results/worst_case/worst-case.md, "Examiners that move at their defaults"). The paper's settings:
    examiner.q=32 examiner.lr=0.001 with a budget of 500 updates (audit.budget=500 audit.budget_unit=iterations).

    Choice of baseline, measured (benchmarks/worst_case/rl_concentration_synthetic.py, docs/results/worst_case/worst-case.md: a
    planted region of 1/3 volume on one of 9 factors, 10 instances, 2 seeds): share of the last 2
    updates' proposals in the region after 100 updates: ema 0.55, batch_mean 0.54, none 0.37 (lr 0.001);
    ema 1.00, batch_mean 1.00, none 0.99 (lr 0.01); after 250 updates all reach 0.97-1.00. A baseline
    (ema or batch_mean: equal within the intervals) doubles the early progress over none, so ema stays
    the default (resumable state). With budgets under ~250 updates use examiner.lr=0.01
    (benchmarks/worst_case/planted_weakness.sh does).
    """

    config_group: ClassVar[str] = "examiner"
    config_path: ClassVar[str] = "examiner"
    schema_name: ClassVar[Optional[str]] = "rl_schema"

    _target_: str = "advaudit.examiners.rl.RLExaminer"
    _partial_: bool = True  # the audit supplies n_instances, n_dims, seed, device, periodic
    name: str = "rl"
    q: int = ranged(16, low=1, integer=True)  # samples per policy update (paper: 32)
    bins: int = ranged(100, low=2, integer=True)
    embedding: int = ranged(30, low=1, integer=True)
    hidden: int = ranged(30, low=1, integer=True)
    lr: float = ranged(0.03, learning_rate=True)  # paper: 0.001, which needs ~250 updates to concentrate
    baseline_decay: float = ranged(0.9, low=0, high=1, high_open=True)  # ema only
    baseline: RLBaseline = RLBaseline.ema  # REINFORCE baseline: ema | batch_mean | none (paper Eq. 5 has none)
    order: Optional[List[int]] = None  # factor indices in sampling order (Section 4.5); null = declared order

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        """A warning where the budget ends before the policy's first update."""
        budget, q = query_budget(context), int(get(node, "q") or 1)
        if budget is not None:
            context.warn(budget <= q, f"audit.budget={budget} queries is at most one RL iteration of {path}.q={q}: "
                         "the policy is never updated before its last proposals, so E_T is that of its "
                         "untrained (near-uniform) policy")
