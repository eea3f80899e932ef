"""The error-search audit (Algorithm 1 of the adversarial-distance paper, replicated R times).

``python examine.py audit=error_search search=adversarial_distance target=<target.pt>``

1. Predict the split with the target; keep items predicted as the critical class with calibrated
   confidence > tau (the pools' population).
2. Build ``search.name`` and every method in ``audit.compare`` from their ``_target_`` blocks
   (:mod:`advaudit.search.methods`); every scorer scores each eligible item once (e.g. attack + MAE
   for adversarial distance / GAD; cached, resumable).
3. Draw R pools of P items; run every method on all pools (batched), asking the oracle B times per
   pool: a scorer queries in ascending order of its score, a policy chooses as the answers come.
4. The paper's measures per query count (SDR, errors found, spread, Bansal & Weld's coverage
   utility, confidence of the queried items), averaged over the pools, the oracle ceiling, plots, a
   report, and W&B. Pools of one run overlap: intervals come from independent replications
   (``benchmarks/error_search/error_search_replications.py``), never from these pools.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from advaudit.audits.common import load_audit_target, target_datamodule
from advaudit.audits.error_search_queries import draw, query_pools
from advaudit.audits.error_search_report import write_report
from advaudit.audits.lifecycle import RunDir, fingerprint
from advaudit.audits.shards import finish_shard, start_shard
from advaudit.config import typed
from advaudit.audits.settings import ErrorSearchAuditConf
from advaudit.core.records import append_jsonl
from advaudit.data.split import class_index
from advaudit.errors import require
from advaudit.models.targets.tracking import open_wandb
from advaudit.search.attacks import attack_box
from advaudit.search.methods import build_method, is_scorer
from advaudit.search.metrics import oracle_ceiling, pool_mean_and_sd, sdr_curve
from advaudit.search.pools import eligible
from advaudit.search.scorers import ScoreInputs

log = logging.getLogger(__name__)
SECTIONS = ErrorSearchAuditConf.card.sections  # the config sections besides the audit that change its results
MEASURES = ("sdr", "errors", "spread", "coverage", "confidence")  # per query count, see advaudit.search.metrics


@dataclass
class Search:
    """One error search set up before its methods run: the audited ``split``, the eligible items (``items``
    ``[E, ...]``, their ``index`` ``[E]`` in the split, confidence ``conf_e`` ``[E]``, ``is_error`` ``[E]``), the
    attack box ``low``/``high``, the methods, the scorers' per-item values; then the pools ``[R, P]``, the
    scorers' pool scores and the features ``[E, D]`` the measures use."""

    audit: ErrorSearchAuditConf
    target: Any
    split: Any
    critical: int
    index: torch.Tensor
    conf_e: torch.Tensor
    predicted: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor
    interactive: bool
    methods: list[str] = field(default_factory=list)
    makers: dict[str, Any] = field(default_factory=dict)
    scorers: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    distances: dict[str, torch.Tensor] = field(default_factory=dict)
    pools: torch.Tensor = field(default_factory=lambda: torch.empty(0, 0, dtype=torch.long))
    item_scores: dict[str, torch.Tensor] = field(default_factory=dict)
    features: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    proba: torch.Tensor | None = None  # [N, K] the target's calibrated probabilities of the split's items

    @property
    def items(self) -> torch.Tensor:
        return self.split.x[self.index]

    @property
    def is_error(self) -> torch.Tensor:
        """``[E]`` bool: the eligible item is a mistake (only the label oracle and the metrics read it)."""
        return self.split.y[self.index] != self.critical


def run(cfg: DictConfig, resumed: dict[str, int] | None = None) -> dict[str, Any]:
    """Search ``cfg.target``'s confident mistakes with ``cfg.search.name`` and ``audit.compare``; returns the summary.

    With ``audit.shards`` > 1 the job scores its chunks of the eligible items only (:func:`_score_shard`). The
    merge of the shards (:mod:`advaudit.audits.error_search_merge`) runs the whole search on their scores, saying
    how many items each scorer's shards had found scored already (``resumed``)."""
    run_dir = RunDir(Path(cfg.paths.output_dir), cfg, SECTIONS)
    out = run_dir.out
    if typed(ErrorSearchAuditConf, cfg.audit).shards > 1:
        return _score_shard(cfg, out)
    search = _set_up(cfg, out, resumed or {})
    budget = draw(search, int(cfg.seed))                                                   # pools [R, P]
    for name, scorer in search.scorers.items():
        search.item_scores[name] = scorer.pool_scores(search.distances[name], search.conf_e, search.pools)
    results = _run_methods(run_dir, search, budget, int(cfg.seed))
    if not search.interactive:
        results["oracle_ceiling"] = _ceiling_record(search.is_error[search.pools], search.conf_e[search.pools], budget)
    summary = _summarise(search, str(cfg.search.name), results, budget)
    with open_wandb(cfg, job_type="examine", name=f"error_search-{cfg.search.name}") as wandb_run:
        paths = write_report(out, results, summary, search.items, search.conf_e, search.is_error, search.distances,
                             search.pools, search.target, search.critical, str(cfg.search.name), search.interactive)
        wandb_run.log(summary)
        for key, path in paths.items():
            wandb_run.log_image(key, path)
    return summary


def _set_up(cfg: DictConfig, out: Path, resumed: dict[str, int]) -> Search:
    """Load the target, keep the eligible items of its split, build every method and score the items once."""
    search = _eligible(cfg)
    inputs = _score_inputs(search)
    for name, scorer in search.scorers.items():
        search.distances[name], search.facts[name] = scorer.item_values(inputs, out / "scores" / name)
        if name in resumed:  # a merge: the items the shards had found scored, not the ones the merge read
            search.facts[name]["resumed_items"] = resumed[name]
    return search


def _score_shard(cfg: DictConfig, out: Path) -> dict[str, Any]:
    """Shard ``audit.shard`` of ``audit.shards``: every scorer attacks its chunks of the eligible items
    (:meth:`advaudit.search.scorers.AttackScorer.score_part`) into ``<out>/scores``; the pools, the methods and the
    report come once, in the merge."""
    audit = typed(ErrorSearchAuditConf, cfg.audit)
    search = _eligible(cfg)
    unsplit = [name for name, scorer in search.scorers.items() if not hasattr(scorer, "score_part")]
    require(not unsplit, f"the scorers {unsplit} cannot score a part of the items (no score_part); use audit.shards=1")
    chunks = {name: -(-len(search.index) // scorer.chunk) for name, scorer in search.scorers.items()}
    for name, count in chunks.items():
        require(audit.shards <= count, f"audit.shards={audit.shards} but {name} attacks the {len(search.index)} eligible "
                f"items in {count} chunks of {search.scorers[name].chunk}; use audit.shards <= {count} or smaller chunks "
                f"(search.{name}.attack.chunk, the same in the one-job run you compare with)")
    start_shard(out, "error_search", audit.shard, audit.shards, fingerprint(cfg, SECTIONS, keep=()))
    inputs = _score_inputs(search)
    facts = {name: scorer.score_part(inputs, out / "scores" / name, audit.shard, audit.shards)
             for name, scorer in search.scorers.items()}
    budget = draw(search, int(cfg.seed))
    for name in search.methods:  # the methods that read no scores: this shard's chunks of pools
        if name not in search.scorers:
            started = time.perf_counter()
            chosen = query_pools(out, search, name, budget, int(cfg.seed), audit.shard, audit.shards)["positions"]
            log.info("%s: %d of %d pools in %.1f s", name, len(chosen), len(search.pools), time.perf_counter() - started)
    finish_shard(out, scorers=facts)
    return {"shard": audit.shard, "shards": audit.shards, "search/eligible": len(search.index),
            **{f"search/{name}/chunks": count for name, count in chunks.items()}}


def _eligible(cfg: DictConfig) -> Search:
    """Load the target, keep the eligible items of its split and build every method (nothing scored yet)."""
    audit, search_cfg = typed(ErrorSearchAuditConf, cfg.audit), cfg.search
    target = load_audit_target(cfg)
    split = target_datamodule(target, audit.dataset).splits[audit.split.value]
    critical = class_index(audit.critical_class, target.class_names)
    probs = target.predict_proba(split.x)                       # calibrated, [N, K]
    confidence, predicted = probs.max(1)
    index = eligible(predicted, confidence, critical, audit.tau).nonzero().squeeze(1)
    search = Search(audit, target, split, critical, index, confidence[index], predicted,
                    *attack_box(split.x, audit.box), interactive=str(cfg.get("oracle", "labels")) == "cli")
    search.proba = probs
    log.info("%d of %d %s items are predicted %r with confidence > %s (%d errors among them)",
             len(index), len(split.x), audit.split.value, target.class_names[critical], audit.tau,
             int(search.is_error.sum()))
    search.methods = [str(search_cfg.name)] + [m for m in audit.compare if m != search_cfg.name]
    search.makers = {name: build_method(search_cfg, name) for name in search.methods}
    search.scorers = {name: method for name, make in search.makers.items() if is_scorer(method := make(), name)}
    return search


def _score_inputs(search: Search) -> ScoreInputs:
    return ScoreInputs(search.items, search.index, search.split.x, search.predicted, search.low, search.high,
                       search.critical, search.target, search.proba)


def _run_methods(run_dir: RunDir, search: Search, budget: int, seed: int) -> dict[str, dict[str, Any]]:
    """Every method's curves, in order; each method draws from its own streams (one per chunk of pools,
    :mod:`advaudit.audits.error_search_queries`), and each finished method is a unit of the run dir, so a rerun
    loads the finished methods and the finished chunks of the others."""
    results: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(search.methods[:1] if search.interactive else search.methods):
        saved = run_dir.load("method_curves", f"{i:02d}-{name}")
        if saved is not None:
            results[name] = json.loads(saved["record"])
            continue
        started = time.perf_counter()
        results[name] = _method_record(name, query_pools(run_dir.out, search, name, budget, seed), search.pools,
                                       search.conf_e)
        results[name]["seconds"] = round(time.perf_counter() - started, 2)
        log.info("%s: %d pools x %d queries in %.1f s", name, len(search.pools), budget, results[name]["seconds"])
        run_dir.save("method_curves", f"{i:02d}-{name}", {"record": json.dumps(results[name])})
    path = run_dir.out / "methods.jsonl"
    path.unlink(missing_ok=True)
    append_jsonl(path, list(results.values()))
    return results


def _summarise(search: Search, method: str, results: dict[str, dict[str, Any]], budget: int) -> dict[str, Any]:
    """The audit's summary: the set-up, each method's facts and time, and every measure at ``audit.report_at``."""
    audit, pools = search.audit, search.pools
    summary = {
        "search/method": method, "search/eligible": len(search.index),
        "search/eligible_errors": None if search.interactive else int(search.is_error.sum()),
        "search/pool_errors_mean": float(search.is_error[pools].float().sum(1).mean()),
        "search/replications": len(pools), "search/pool_size": pools.shape[1], "search/budget": budget,
        **{f"search/{name}/{k}": v for name, f in search.facts.items() for k, v in f.items()},
        **{f"search/{name}/seconds": r["seconds"] for name, r in results.items() if "seconds" in r},
    }
    for name, record in results.items():
        if "confidence_mean" in record:  # the paper's Fig. 7: confidence of everything the method queried
            summary[f"search/{name}/queried_confidence"] = sum(record["confidence_mean"]) / len(record["confidence_mean"])
        for k in audit.report_at:
            if k <= budget:
                for measure in MEASURES:
                    if f"{measure}_mean" in record:
                        summary[f"search/{name}/{measure}@{k}"] = record[f"{measure}_mean"][k - 1]
        if name == method:
            summary.update({f"search/sdr@{k}": record["sdr_mean"][k - 1] for k in audit.report_at if k <= budget})
    return summary


def _method_record(name: str, queried: dict[str, torch.Tensor], pools: torch.Tensor,
                   confidence: torch.Tensor) -> dict[str, Any]:
    """Curves over query counts ``1..B`` for one method: each measure's mean and SD over the pools.

    ``queried``: the method's ``positions`` / ``answers`` ``[R, B]`` (positions within each pool) and its
    ``spread`` / ``coverage`` curves ``[R, B]`` (:func:`advaudit.audits.error_search_queries.query_pools`);
    ``pools`` ``[R, P]`` eligible-item indices, ``confidence`` ``[N]`` of the eligible items.
    """
    positions, answers = queried["positions"], queried["answers"]
    item = pools.gather(1, positions)                       # [R, B] eligible-item indices
    queried_conf = confidence[item]
    curves = {"sdr": sdr_curve(answers, queried_conf), "errors": answers.double().cumsum(1),
              "spread": queried["spread"], "coverage": queried["coverage"], "confidence": queried_conf}
    record: dict[str, Any] = {"method": name}
    for key, values in curves.items():
        mean, sd = pool_mean_and_sd(values)
        record[f"{key}_mean"], record[f"{key}_sd"] = mean.tolist(), sd.tolist()
    record["queried_confidence"] = queried_conf.flatten().tolist()[:20000]
    record["first_pool_items"] = item[0].tolist()
    record["first_pool_answers"] = answers[0].tolist()
    return record


def _ceiling_record(is_error: torch.Tensor, confidence: torch.Tensor, budget: int) -> dict[str, Any]:
    mean, sd = pool_mean_and_sd(oracle_ceiling(is_error, confidence, budget))
    return {"method": "oracle_ceiling", "sdr_mean": mean.tolist(), "sdr_sd": sd.tolist()}
