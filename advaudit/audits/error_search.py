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

import logging
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from advaudit.audits.common import load_audit_target, target_datamodule
from advaudit.audits.error_search_report import write_report
from advaudit.config import typed
from advaudit.audits.settings import ErrorSearchAuditConf
from advaudit.confutil import plain
from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.data.split import class_index
from advaudit.models.tracking import open_wandb
from advaudit.search.attacks import attack_box
from advaudit.search.baselines import ScoreOrder
from advaudit.search.coverage import PAPER_VARIANCE, coverage_utility_curve, pool_diameter
from advaudit.search.features import pca_features
from advaudit.search.methods import build_method, is_scorer
from advaudit.search.metrics import oracle_ceiling, pool_mean_and_sd, sdr_curve, spread_curve
from advaudit.search.oracle import TerminalOracle
from advaudit.search.policy import PoolBatch, label_oracle, run_policy
from advaudit.search.pools import draw_pools, eligible
from advaudit.search.scorers import ScoreInputs

log = logging.getLogger(__name__)
MEASURES = ("sdr", "errors", "spread", "coverage", "confidence")  # per query count, see advaudit.search.metrics


def run(cfg: DictConfig) -> dict[str, Any]:
    """Search ``cfg.target``'s confident mistakes with ``cfg.search.name`` and ``audit.compare``; returns the summary."""
    out = Path(cfg.paths.output_dir)
    audit, search = typed(ErrorSearchAuditConf, cfg.audit), cfg.search
    target = load_audit_target(cfg)
    datamodule = target_datamodule(target, audit.dataset)
    split = datamodule.splits[audit.split.value]
    critical = class_index(audit.critical_class, target.class_names)

    probs = target.predict_proba(split.x)                       # calibrated, [N, K]
    confidence, predicted = probs.max(1)
    mask = eligible(predicted, confidence, critical, audit.tau)
    index = mask.nonzero().squeeze(1)
    items, conf_e = split.x[index], confidence[index]
    is_error = split.y[index] != critical                       # only used by the label oracle and metrics
    log.info("%d of %d %s items are predicted %r with confidence > %s (%d errors among them)",
             len(index), len(split.x), audit.split.value, target.class_names[critical], audit.tau,
             int(is_error.sum()))

    methods = [str(search.name)] + [m for m in audit.compare if m != search.name]
    makers = {name: build_method(search, name) for name in methods}
    scorers = {name: method for name, make in makers.items() if is_scorer(method := make(), name)}
    facts: dict[str, Any] = {}
    item_scores: dict[str, torch.Tensor] = {}
    distances: dict[str, torch.Tensor] = {}
    low, high = attack_box(split.x, audit.box)
    inputs = ScoreInputs(items, index, split.x, predicted, low, high, critical, target)
    for name, scorer in scorers.items():
        distances[name], facts[name] = scorer.item_values(inputs, out / "scores" / name)

    generator = torch.Generator().manual_seed(int(cfg.seed))
    interactive = str(cfg.get("oracle", "labels")) == "cli"
    replications = 1 if interactive else audit.replications
    clamp = interactive or audit.clamp_pool_size  # pools as large as the data allow
    pool_size = min(audit.pool_size, len(index)) if clamp else audit.pool_size
    if pool_size < audit.pool_size:
        log.info("pools of %d: only %d eligible items (audit.pool_size=%d)", pool_size, len(index), audit.pool_size)
    pools = draw_pools(len(index), pool_size, replications, generator)      # [R, P]
    for name, scorer in scorers.items():
        item_scores[name] = scorer.pool_scores(distances[name], conf_e, pools)

    # table columns in different units count alike after range-normalisation; pixels stay as they are
    scaled = (items - inputs.low) / (inputs.high - inputs.low).clamp_min(1e-12) if items.dim() == 2 else items
    features = pca_features(scaled, audit.features.components)
    budget = min(audit.budget, pool_size)
    results = _completed(out)
    # the coverage utility every method is measured with: Bansal & Weld's kernel width (their method's setting)
    variance = float((plain(search.get("bansal_weld"), {}) or {}).get("variance", PAPER_VARIANCE))
    diameters = torch.cat([pool_diameter(features[pools[s:s + 100]]) for s in range(0, replications, 100)])
    chunk = audit.pool_chunk
    for name in (methods[:1] if interactive else methods):
        if name in results:
            continue
        started = time.perf_counter()
        positions, answers = [], []
        for start in range(0, replications, chunk):
            rows = slice(start, start + chunk)
            batch = PoolBatch(features[pools[rows]], conf_e[pools[rows]],
                              {k: v[rows] for k, v in item_scores.items()})
            oracle = (TerminalOracle(items, pools[0], index, target.class_names[critical], conf_e, out / "oracle")
                      if interactive else label_oracle(is_error[pools[rows]]))
            policy = ScoreOrder(name) if name in scorers else makers[name]()
            chosen, found = run_policy(policy, batch, oracle, budget, generator)
            positions.append(chosen)
            answers.append(found)
        results[name] = _method_record(name, torch.cat(positions), torch.cat(answers), pools, conf_e, features,
                                       variance, diameters)
        results[name]["seconds"] = round(time.perf_counter() - started, 2)
        log.info("%s: %d pools x %d queries in %.1f s", name, replications, budget, results[name]["seconds"])
        append_jsonl(out / "methods.jsonl", results[name])
    if not interactive:
        results["oracle_ceiling"] = _ceiling_record(is_error[pools], conf_e[pools], budget)

    summary = {
        "search/method": str(search.name), "search/eligible": len(index),
        "search/eligible_errors": None if interactive else int(is_error.sum()),
        "search/pool_errors_mean": float(is_error[pools].float().sum(1).mean()),
        "search/replications": replications, "search/pool_size": pool_size, "search/budget": budget,
        **{f"search/{name}/{k}": v for name, f in facts.items() for k, v in f.items()},
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
        if name == search.name:
            summary.update({f"search/sdr@{k}": record["sdr_mean"][k - 1]
                            for k in audit.report_at if k <= budget})
    with open_wandb(cfg, job_type="examine", name=f"error_search-{search.name}") as wandb_run:
        paths = write_report(out, results, summary, items, conf_e, is_error, distances, pools, target, critical,
                             str(search.name), interactive)
        wandb_run.log(summary)
        for key, path in paths.items():
            wandb_run.log_image(key, path)
    return summary


def _completed(out: Path) -> dict[str, dict[str, Any]]:
    """Methods already finished by an earlier, interrupted run of the same audit."""
    path = out / "methods.jsonl"
    return {r["method"]: r for r in read_jsonl(path)} if path.exists() else {}


def _method_record(name: str, positions: torch.Tensor, answers: torch.Tensor, pools: torch.Tensor,
                   confidence: torch.Tensor, features: torch.Tensor, variance: float,
                   diameters: torch.Tensor, chunk: int = 100) -> dict[str, Any]:
    """Curves over query counts ``1..B`` for one method: each measure's mean and SD over the pools.

    ``positions`` / ``answers`` ``[R, B]`` (positions within each pool), ``pools`` ``[R, P]`` eligible-item
    indices, ``confidence`` ``[N]`` and ``features`` ``[N, D]`` of the eligible items, ``diameters`` ``[R]``.
    """
    item = pools.gather(1, positions)                       # [R, B] eligible-item indices
    queried_conf = confidence[item]
    spread, coverage = [], []
    for s in range(0, len(pools), chunk):                   # [chunk, P, B] distances at a time
        rows = slice(s, s + chunk)
        pool_features, pool_conf = features[pools[rows]], confidence[pools[rows]]
        spread.append(spread_curve(pool_features, positions[rows]))
        coverage.append(coverage_utility_curve(pool_features, pool_conf, positions[rows], answers[rows],
                                               variance, diameters[rows]))
    curves = {"sdr": sdr_curve(answers, queried_conf), "errors": answers.double().cumsum(1),
              "spread": torch.cat(spread), "coverage": torch.cat(coverage), "confidence": queried_conf}
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
