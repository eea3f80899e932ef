"""The audits' settings (``conf/audit/<name>.yaml`` names its dataclass here) and their cross-key checks."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional

from omegaconf import MISSING

from advaudit.audits.checks import (check_audit_dataset, check_error_search, check_fault_tests, check_gallery,
                                    check_worst_case)
from advaudit.config.audit_card import AuditCard, Metric, MetricPattern
from advaudit.config.part import Part
from advaudit.config.ranges import Ranged, ranged
from advaudit.config.roots import FunctionConf
from advaudit.config.rules import Split
from advaudit.config.validation import Context
from advaudit.worlds.settings import ValidityConf


class Mode(str, Enum):
    weakness = "weakness"
    strength = "strength"


class Selection(str, Enum):
    stratified = "stratified"
    best_per_class = "best_per_class"
    random = "random"


class BudgetUnit(str, Enum):
    queries = "queries"
    iterations = "iterations"


class FaultBudget(str, Enum):
    fixed = "fixed"
    annealed = "annealed"


class PixelEngine(str, Enum):
    foolbox = "foolbox"
    advaudit = "advaudit"


# -- worst case ----------------------------------------------------------------------------------


#: the report budgets of the examiner paper's Table 2: ``audit.report_budgets``' default, up to the budget
PAPER_REPORT_BUDGETS = (0, 100, 300, 500)


def report_budgets_within(budget: Any) -> List[int]:
    """``${report_budgets_within:${.budget}}``: the :data:`PAPER_REPORT_BUDGETS` below ``budget``, then ``budget``."""
    if not isinstance(budget, int) or isinstance(budget, bool):
        return list(PAPER_REPORT_BUDGETS)  # not a budget: validation names it
    return [b for b in PAPER_REPORT_BUDGETS if b < budget] + [budget]


#: what the comparison, W&B and the reports read about a worst-case run: the primary question first
WORST_CASE_CARD = AuditCard(
    sections=("world", "examiner"), method="examiner.name", searches_world=True, control="examine/random_accuracy",
    metrics=(Metric("examine/E_T_valid", True, "E_T_valid",
                    label="E_T inside S (true-class probability of the final proposals that keep the label)"),
             Metric("examine/E_T", True, "E_T", label="E_T (true-class probability of all final proposals, the paper's)"),
             Metric("examine/worst", True, "worst", label="worst true-class probability found"),
             Metric("examine/failure_rate", False, "failed", binary=True, label="share of instances failed"),
             Metric("examine/random_accuracy", True, "random_accuracy", label="accuracy under random conditions"),
             Metric("examine/invalid_share", None, label="share of invalid proposals")))


@dataclass
class WorstCaseAuditConf(Ranged, Part):
    """``conf/audit/worst_case.yaml``: Algorithm 1 of the adversarial-examiner paper, batched over instances."""

    config_group: ClassVar[str] = "audit"
    schema_name: ClassVar[Optional[str]] = "worst_case_schema"
    card: ClassVar[AuditCard] = WORST_CASE_CARD

    config_path: ClassVar[str] = "audit"
    name: str = "worst_case"
    run: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.audits.worst_case.run"))
    # the primary question: E_T inside S (the paper's E_T over the final proposals that keep the label,
    # audits/examiner_metrics.py); examine/E_T averages all of them (the paper's, on an S that keeps the label
    # by construction); examine/worst is the worst valid case found
    metric: Optional[str] = "examine/E_T_valid"
    budget: int = 500  # per instance, in budget_unit (checked with the report budgets: audits/checks.py)
    # queries (model evaluations) | iterations (examiner steps of q queries; the paper's T: RL updates
    # of 32 samples, BO proposals)
    budget_unit: BudgetUnit = BudgetUnit.queries
    # in budget_unit, each <= budget (the audit also reports at the budget itself). Default: the paper's
    # 0, 100, 300, 500 (Table 2) below the budget, then the budget: audit.budget=60 gives [0, 60]
    report_budgets: List[int] = "${report_budgets_within:${.budget}}"  # type: ignore[assignment]
    mode: Mode = Mode.weakness  # weakness: minimise the true-class prob; strength: maximise it (Sec. 4.6)
    # stratified: per class, instances drawn with the seed: every checkpoint examined with one seed gets
    # the same instances (a paired design). best_per_class (the paper, the reproductions): per class, the
    # val instance with the highest true-class prob *for this checkpoint*, so checkpoints are examined on
    # different instances
    selection: Selection = Selection.stratified
    selection_split: Split = Split.val
    selection_renders: int = ranged(10, low=1, integer=True)  # best_per_class: random renders per candidate
    # null: one per class (stratified, best_per_class); stratified spreads N over the classes in turn;
    # required for selection=random
    n_instances: Optional[int] = ranged(None, low=1, integer=True)
    fixed_random: List[str] = field(default_factory=list)  # factors drawn once per instance, not searched (paper: the 3 sun angles)
    calibrated: bool = False  # the paper's loss is the raw post-softmax probability
    # null or e.g. {factor: camera_elevation, abs_above: 30}: share of final vs random examples beyond
    # the threshold (paper Section 4.4; checked in audits/checks.py)
    factor_share: Any = None
    validity: ValidityConf = field(default_factory=ValidityConf)
    # validity where it matters: an independent strong model (a target.pt trained on this world, not the
    # validity reference) names each instance's worst valid case; the report gives the share it still
    # classifies correctly (and its accuracy under random conditions). It never changes the examination.
    judge: Optional[str] = None
    checkpoint_every: int = ranged(10, low=1, integer=True)  # steps between examiner checkpoints (resume)
    # queries rendered and scored together: memory is bounded by this many images (plus the network's activations
    # on them) however large n_instances x q is. null: as many as hold the pixels of 2048 32-px images (2048 at
    # 32 px, 41 at 224 px); results agree to the network's float rounding at any value (docs/results/scale/real-size.md)
    chunk: Optional[int] = ranged(None, low=1, integer=True)
    # one examination over several jobs: this job examines every `shards`-th instance from `shard`
    # (0 <= shard < shards) and records what its instances' report needs; `python -m advaudit.merge <shard run
    # dirs> --out DIR` (or the multirun's end) writes the unsharded result and report once (docs/scaling-out.md).
    # Examiners that search each instance alone split: random, RL, TPE, CMA-ES, and BO with examiner.fit=per_instance
    shards: int = ranged(1, low=1, integer=True)
    shard: int = ranged(0, low=0, integer=True)
    stop_after_steps: Optional[int] = ranged(None, low=0, integer=True)  # testing aid: stop (as if killed) after this many steps

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        check_worst_case(node, context)


# -- error search --------------------------------------------------------------------------------


@dataclass
class SearchFeaturesConf(Ranged):
    """``audit.features``: PCA of the inputs, the derived feature space of spread/clustering/meta-model."""

    config_path: ClassVar[str] = "audit.features"
    components: int = ranged(20, low=1, integer=True)


@dataclass
class ErrorSearchAuditConf(Ranged, Part):
    """``conf/audit/error_search.yaml``: find a model's confident mistakes in an unlabeled pool with few
    labels (adversarial distance papers). ``search.name`` is the method reported first (``search=<name>``);
    every method in ``compare`` runs beside it on the same pools. Each method is a ``_target_`` block
    ``search.<name>`` (``conf/search/method/<name>.yaml``: :mod:`advaudit.search.methods`).

    Primary metric for comparisons (``metric``; ``conf/audit/error_search.yaml`` sets ``search/sdr@20``): the
    adversarial-distance paper's headline, the success detection rate (Eq. 3: errors found among the labelled
    confident items over the errors their confidence predicts), because it is the one number that measures
    the model's overconfidence rather than its accuracy; at a fixed method and pool a higher SDR means the
    checkpoint's confident mistakes are easier to find, i.e. a weaker checkpoint (:mod:`advaudit.compare.verdict`)."""

    config_group: ClassVar[str] = "audit"
    schema_name: ClassVar[Optional[str]] = "error_search_schema"
    # SDR (errors found over errors the confidence predicts, adversarial-distance paper Eq. 3) is 1 when a model's
    # errors are as frequent as its confidence says and above 1 when it is overconfident: within one group (one
    # search method, one pool) a higher SDR is a checkpoint whose confident mistakes are easier to find, i.e. weaker
    card: ClassVar[AuditCard] = AuditCard(
        sections=("search", "oracle"), method="search.name",
        patterns=(MetricPattern(r"^search/[^/]+/sdr@\d+$", False, "SDR", None),
                  MetricPattern(r"^search/sdr@\d+$", False, "SDR", None)))

    config_path: ClassVar[str] = "audit"
    name: str = "error_search"
    run: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.audits.error_search.run"))
    split: Split = Split.test
    # override the target's own dataset config (e.g. a shifted test set): as for audit=evaluate,
    # +dataset@audit.dataset=<conf/dataset option> or a block with _target_
    dataset: Any = None
    critical_class: Any = 0  # name or index: search among items predicted as this class
    tau: float = ranged(0.65, low=0, high=1)  # ... with calibrated confidence above tau
    # attack box and MAE unit: auto ([0, 1] for images, observed per-feature range for tables) | observed | [low, high]
    box: Any = "auto"
    # P items per simulated unlabeled pool (>= budget: checked in audits/checks.py)
    pool_size: int = ranged(2000, low=1, integer=True, message="{path}={value}: a pool needs at least one item; "
                            "the nearest valid value is 1")
    replications: int = ranged(1000, low=1, integer=True)  # R pools
    budget: int = ranged(50, low=1, integer=True, message="{path}={value}; the number of queries must be >= 1 "
                         "(the nearest valid value is 1)")  # B oracle queries per pool
    pool_chunk: int = ranged(100, low=1, integer=True)  # pools processed together (memory: chunk * P * anchors floats)
    features: SearchFeaturesConf = field(default_factory=SearchFeaturesConf)
    compare: List[str] = field(default_factory=list)
    report_at: List[int] = field(default_factory=list)
    metric: Optional[str] = None
    # kernel width of Bansal & Weld's coverage utility that every method is measured with (the paper's 0.001);
    # an audit-level setting, so changing one method's own settings (search.bansal_weld.variance) changes no
    # other method's score
    coverage_variance: float = ranged(0.001, low=0, low_open=True)
    # true: pools of min(pool_size, eligible items), the largest the data allow; false: more than the
    # eligible items is an error
    clamp_pool_size: bool = False
    # one error search over several jobs: this job scores every `shards`-th chunk of the eligible items from
    # `shard` (0 <= shard < shards), the costly part; `python -m advaudit.merge <shard run dirs> --out DIR` (or
    # the multirun's end) draws the pools and runs every method once, equal to the unsharded run
    # (docs/scaling-out.md). Scorers that can score a part only (adversarial distance, GAD)
    shards: int = ranged(1, low=1, integer=True)
    shard: int = ranged(0, low=0, integer=True)

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        check_error_search(node, context)


# -- fault tests ---------------------------------------------------------------------------------


@dataclass
class FaultTestsAuditConf(Ranged, Part):
    """``conf/audit/fault_tests.yaml``: confident targeted failing tests from a conditional generator's
    early activations (generative fault tests paper), next to pixel-space PGD tests from the same seeds.

    Primary metric for comparisons (``metric``; ``conf/audit/fault_tests.yaml`` sets ``faults/generator/success``):
    the paper's headline, the share of seeds for which a confident targeted failing test is found within the
    activation budget, because it asks the paper's question of the checkpoint (does it make this confident
    mistake on natural-looking inputs?); higher is a weaker checkpoint (:mod:`advaudit.compare.verdict`)."""

    config_group: ClassVar[str] = "audit"
    schema_name: ClassVar[Optional[str]] = "fault_tests_schema"
    card: ClassVar[AuditCard] = AuditCard(
        sections=("generator",),
        patterns=(MetricPattern(r"^faults/[^/]+/success$", False, "fault-test success", 1.0),
                  MetricPattern(r"^faults/[^/]+/transfer_acc/.+$", None, "accuracy on transferred tests", 1.0)))

    config_path: ClassVar[str] = "audit"
    name: str = "fault_tests"
    run: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.audits.fault_tests.run"))
    source_class: Any = 0  # seeds are generated as this class (name or index)
    target_class: Any = 1  # the confident mistake to reach; null = untargeted
    n_seeds: int = ranged(200, low=1, integer=True)
    k: int = ranged(2, low=1, high=3, integer=True)  # perturb the outputs of the first k generator blocks (of 3 hidden blocks)
    eps: float = ranged(4.0, low=0, low_open=True)  # L2 budget over all perturbations (in units of per-neuron activation std)
    budget: FaultBudget = FaultBudget.fixed  # fixed | annealed (1 + 0.1 t, capped at eps: the authors' code)
    kappa: float = ranged(1.0, low=0)  # confidence margin on the logits
    lr: float = ranged(0.003, learning_rate=True)
    max_steps: int = ranged(400, low=1, integer=True)
    # seeds searched together (both directions share a chunk); docs/results/fault_tests/fault-tests.md measures the walk's cost
    # at chunks of 400
    chunk: int = ranged(400, low=1, integer=True)
    # pixel baselines: PGD with the same margin loss; {} to skip. foolbox = foolbox 3's L2PGD/LinfPGD
    # (every step, every image); advaudit = own PGD that keeps each image's first success (smaller change)
    pixel_engine: PixelEngine = PixelEngine.foolbox
    pixel: Dict[str, Any] = field(default_factory=dict)
    transfer_targets: List[str] = field(default_factory=list)  # other classifiers to score the tests on (RQ3)
    metric: Optional[str] = None
    # injected-fault check (RQ1): {kind: patch|brightness|size, direction: +1|-1} or a list of them: per
    # kind of test and feature, the share of failing tests whose feature moved from seed to test in that
    # direction (feature/<kind>/moved_share, with a 95% interval over tests; _valid: valid tests only)
    # and the mean signed change (shift_mean). The first feature is also reported as feature_moved_share.
    fault_feature: Any = None
    # independent validity judge: a classifier of another architecture trained on real data (never the
    # target); a failing test is valid when the judge still gives it the seed's class (valid_share).
    # With a judge, transfer accuracies (RQ3) count valid tests only.
    judge: Optional[str] = None
    # also test the reverse direction (target_class seeds -> source_class) in the same batched walk;
    # reported under faults/reverse/<kind>/..., with each fault_feature's direction negated
    both_directions: bool = False

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        check_fault_tests(node, context)


# -- gallery, evaluate ---------------------------------------------------------------------------


@dataclass
class GalleryAuditConf(Ranged, Part):
    """``conf/audit/gallery.yaml``: one PNG per instance, a row per factor, its range swept left to
    right (no target needed)."""

    config_group: ClassVar[str] = "audit"
    schema_name: ClassVar[Optional[str]] = "gallery_schema"
    card: ClassVar[AuditCard] = AuditCard(sections=("world",))

    config_path: ClassVar[str] = "audit"
    needs_target: ClassVar[bool] = False  # renders the world only
    name: str = "gallery"
    run: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.audits.gallery.run"))
    split: Split = Split.test
    n_instances: int = ranged(3, low=1, integer=True)
    steps: int = ranged(7, low=2, integer=True)
    base: float = ranged(0.5, low=0, high=1)  # unit-cube position of the factors not being swept
    base_overrides: Any = None  # null or {factor: unit-cube value}, e.g. {sun_energy: 0.8}

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        check_gallery(node, context)


@dataclass
class EvaluateAuditConf(Ranged, Part):
    """``conf/audit/evaluate.yaml``: accuracy, ECE, per-class accuracy, reliability diagram and
    confusion matrix on the test split."""

    config_group: ClassVar[str] = "audit"
    schema_name: ClassVar[Optional[str]] = "evaluate_schema"
    card: ClassVar[AuditCard] = AuditCard(sections=(), metrics=(
        Metric("evaluate/acc", True, "correct", binary=True, label="accuracy"),
        Metric("evaluate/mean_true_prob", True, "true_prob", label="mean true-class probability"),
        Metric("evaluate/ece", False, label="expected calibration error"),
        Metric("evaluate/worst_class_acc", True, label="worst-class accuracy")))

    config_path: ClassVar[str] = "audit"
    name: str = "evaluate"
    run: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.audits.evaluate.run"))
    metric: Optional[str] = None
    split: Split = Split.test
    # a dataset config to evaluate on instead of the target's own (e.g. a shifted test set), with the
    # target's classes (paired by name, in any order): a conf/dataset option with +dataset@audit.dataset=fashion_mnist (then
    # audit.dataset.<key>=... as for dataset=), or a block audit.dataset={_target_: ..., limit: {test: 500}}
    dataset: Any = None

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        check_audit_dataset(node, context)
