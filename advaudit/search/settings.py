"""The error-search methods' settings (``conf/search/method/<name>.yaml`` names its dataclass here).

A method's YAML option is named as its schema less ``_schema`` (``gad_schema``: ``conf/search/method/gad.yaml``,
the block ``search.gad``): :mod:`advaudit.registry` composes every method it finds that way
(``search/methods``) and makes ``search=<name>`` select it."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional

from advaudit.config.part import Part
from advaudit.config.ranges import Ranged, ranged
from advaudit.search.coverage import PAPER_VARIANCE


class AttackMethod(str, Enum):
    hsj = "hsj"
    boundary = "boundary"
    hop_skip_jump = "hop_skip_jump"


class Design(str, Enum):
    lhs = "lhs"
    pool = "pool"
    neighbourhood = "neighbourhood"


@dataclass
class LowessConf(Ranged):
    """statsmodels ``lowess`` arguments (``frac``, ``it``, ``delta``), the distance (``log``) and where
    the fit is made (``per_pool``: on each pool's items, else once on all items)."""

    config_path: ClassVar[str] = "search.<method>.lowess"
    frac: float = ranged(0.1, low=0, high=1, low_open=True)
    it: int = 3
    delta: float = 0.0
    log: bool = True
    per_pool: bool = True


@dataclass
class DecisionAttackConf:
    # hsj (advaudit's batched HopSkipJump) | boundary | hop_skip_jump (foolbox 3)
    method: AttackMethod = AttackMethod.hsj
    # hsj iterations / foolbox steps (boundary needs ~25000 to converge); 6 hsj steps ~ 240 queries/item,
    # rank rho 0.90 vs converged (4 steps: 0.87), 2,000 items in 222 s on one CPU thread (docs/results/error_search/error-search.md)
    steps: int = ranged(6, low=1, integer=True)
    gradient_queries: int = ranged(16, low=1, integer=True)  # hsj: probes of the first gradient estimate (grows with sqrt(step))
    max_gradient_queries: int = 32
    binary_steps: int = ranged(8, low=1, integer=True)  # hsj: bisections per return to the boundary
    chunk: int = ranged(500, low=1, integer=True)  # items attacked together; each finished chunk is saved (resume)
    seed: int = 0
    params: Dict[str, Any] = field(default_factory=dict)  # extra foolbox constructor arguments
    # hsj, images: gradient probes on an r x r grid, upsampled (null: full resolution; r ranked worse on
    # Fashion-MNIST)
    probe_resolution: Optional[int] = ranged(None, low=1, integer=True)


@dataclass
class AdversarialDistanceConf(Part):
    """``conf/search/method/adversarial_distance.yaml``: the adversarial-distance scorer."""

    config_group: ClassVar[str] = "search/method"
    schema_name: ClassVar[Optional[str]] = "adversarial_distance_schema"

    _target_: str = "advaudit.search.scorers.AdversarialDistance"
    _partial_: bool = True  # the audit builds it (no arguments to supply) and hands it the items to score
    attack: DecisionAttackConf = field(default_factory=DecisionAttackConf)
    lowess: LowessConf = field(default_factory=LowessConf)


@dataclass
class PseudoModelConf(Ranged):
    """GAD's pseudo-model (:func:`advaudit.search.pseudo_model.extract_pseudo_model`)."""

    config_path: ClassVar[str] = "search.gad.pseudo_model"
    # lhs (Latin hypercube over the data's ranges) | pool (the unlabeled items) | neighbourhood (pool + jitter)
    design: Design = Design.lhs
    jitter: float = 0.1  # neighbourhood: noise std as a share of each feature's range
    design_size: int = ranged(50000, low=10, integer=True)
    hidden: List[int] = field(default_factory=lambda: [128, 128, 64, 32])  # + the output layer = the paper's 5 dense layers
    epochs: int = ranged(20, low=1, integer=True)
    lr: float = ranged(0.001, learning_rate=True)
    batch_size: int = ranged(256, low=1, integer=True)
    seed: int = 0


@dataclass
class GADAttackConf:
    step: float = ranged(0.01, low=0, low_open=True)  # sign step per feature, as a share of the feature's range
    max_steps: int = ranged(500, low=1, integer=True)  # then "never flipped": kept, marked, out of the LOWESS fit
    chunk: int = ranged(100000, low=1, integer=True)


@dataclass
class GADConf(Part):
    """``conf/search/method/gad.yaml``: the GAD scorer (a pseudo-model's gradient, then adversarial distance)."""

    config_group: ClassVar[str] = "search/method"
    schema_name: ClassVar[Optional[str]] = "gad_schema"

    _target_: str = "advaudit.search.scorers.GAD"
    _partial_: bool = True  # as AdversarialDistanceConf
    pseudo_model: PseudoModelConf = field(default_factory=PseudoModelConf)
    attack: GADAttackConf = field(default_factory=GADAttackConf)
    lowess: LowessConf = field(default_factory=LowessConf)


@dataclass
class RandomOrderConf(Part):
    """``conf/search/method/random.yaml``: each pool in a seeded random order (no settings)."""

    config_group: ClassVar[str] = "search/method"
    schema_name: ClassVar[Optional[str]] = "random_schema"

    _target_: str = "advaudit.search.baselines.RandomOrder"
    _partial_: bool = True  # as LakkarajuConf


@dataclass
class LowConfidenceConf(Part):
    """``conf/search/method/low_confidence.yaml``: each pool in ascending calibrated confidence (no settings)."""

    config_group: ClassVar[str] = "search/method"
    schema_name: ClassVar[Optional[str]] = "low_confidence_schema"

    _target_: str = "advaudit.search.baselines.LowConfidence"
    _partial_: bool = True  # as LakkarajuConf


@dataclass
class LakkarajuConf(Part, Ranged):
    """``conf/search/method/lakkaraju.yaml``: UCB1 over k-means clusters
    (:class:`advaudit.search.baselines.LakkarajuBandit`)."""

    config_group: ClassVar[str] = "search/method"
    config_path: ClassVar[str] = "search.lakkaraju"
    schema_name: ClassVar[Optional[str]] = "lakkaraju_schema"

    _target_: str = "advaudit.search.baselines.LakkarajuBandit"
    _partial_: bool = True  # the audit makes a fresh policy per chunk of pools
    clusters: int = ranged(10, low=1, integer=True)  # k-means clusters per pool: the bandit's arms
    exploration: float = ranged(2.0, low=0)  # UCB1's exploration weight


@dataclass
class BansalWeldConf(Part, Ranged):
    """``conf/search/method/bansal_weld.yaml``: Bansal & Weld's adaptive greedy
    (:class:`advaudit.search.baselines.BansalWeldCoverage`). ``variance`` is also the coverage utility
    every method is measured with."""

    config_group: ClassVar[str] = "search/method"
    config_path: ClassVar[str] = "search.bansal_weld"
    schema_name: ClassVar[Optional[str]] = "bansal_weld_schema"

    _target_: str = "advaudit.search.baselines.BansalWeldCoverage"
    _partial_: bool = True  # as LakkarajuConf
    # the coverage kernel exp(-(d / d_max)^2 / variance); 0.001 in the paper's runs
    variance: float = ranged(PAPER_VARIANCE, low=0, low_open=True)
    neighbours: int = ranged(64, low=1, integer=True)  # each item's coverage sums over its nearest items
    max_k: int = ranged(5, low=4, integer=True)  # the elbow rule's largest k (it compares k = 2..max_k)
    prior_strength: float = ranged(2.0, low=0, low_open=True)  # weight of the prior 1 - c against a cluster's answers
    # published: P(error) * U(Q + x) (their code); expected_gain: P(error) * (U(Q + x) - U(Q))
    score: str = ranged("published", choices=("published", "expected_gain"))


@dataclass
class FacilityLocationsConf(Part, Ranged):
    """``conf/search/method/facility_locations.yaml``: Maurer & Bennette's facility-locations utility
    (:class:`advaudit.search.baselines.FacilityLocations`)."""

    config_group: ClassVar[str] = "search/method"
    config_path: ClassVar[str] = "search.facility_locations"
    schema_name: ClassVar[Optional[str]] = "facility_locations_schema"

    _target_: str = "advaudit.search.baselines.FacilityLocations"
    _partial_: bool = True  # as LakkarajuConf
    alpha: float = ranged(0.5, low=0, high=1)  # weight of found errors' confidence against their spread
    anchors: int = ranged(128, low=1, integer=True)  # seeded random items per pool the distances sum over
    ridge: float = ranged(1.0, low=0)  # the logistic meta-model's ridge penalty
