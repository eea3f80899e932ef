"""The error-search audit (Algorithm 1 of the adversarial-distance paper, replicated R times).

``python examine.py audit=error_search search=adversarial_distance target=<target.pt>``

1. Predict the split with the target; keep items predicted as the critical class with calibrated
   confidence > tau (the pools' population).
2. Score every eligible item once (attack + MAE for adversarial distance / GAD; cached, resumable).
3. Draw R pools of P items; run the chosen method and every method in ``audit.compare`` on all
   pools (batched), asking the oracle B times per pool.
4. The paper's measures per query count (SDR, errors found, spread, Bansal & Weld's coverage
   utility, confidence of the queried items), averaged over the pools, the oracle ceiling, plots, a
   report, and W&B. Pools of one run overlap: intervals come from independent replications
   (``benchmarks/error_search_replications.py``), never from these pools.
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
from advaudit.confutil import plain
from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.data.split import class_index
from advaudit.errors import require
from advaudit.config import typed
from advaudit.config.schemas import LowessConf
from advaudit.models.tracking import open_wandb
from advaudit.search.adversarial_distance import distance_values, pool_scores
from advaudit.search.attacks import attack_box
from advaudit.search.baselines import build_policy
from advaudit.search.coverage import coverage_utility_curve, pool_diameter
from advaudit.search.features import pca_features
from advaudit.search.metrics import oracle_ceiling, pool_mean_and_sd, sdr_curve, spread_curve
from advaudit.search.oracle import TerminalOracle
from advaudit.search.policy import PoolBatch, label_oracle, run_policy
from advaudit.search.pools import draw_pools, eligible
from advaudit.search.scorers import ScoreInputs, item_distances

log = logging.getLogger(__name__)
SCORED = ("adversarial_distance", "gad")
MEASURES = ("sdr", "errors", "spread", "coverage", "confidence")  # per query count, see advaudit.search.metrics


def run(cfg: DictConfig) -> dict[str, Any]:
    out = Path(cfg.paths.output_dir)
    audit, search = cfg.audit, cfg.search
    target = load_audit_target(cfg)
    datamodule = target_datamodule(target, audit.get("dataset"))
    split = datamodule.splits[str(audit.split)]
    require(int(audit.budget) >= 1, f"audit.budget={audit.budget}; the number of queries must be >= 1")
    critical = class_index(audit.critical_class, target.class_names)

    probs = target.predict_proba(split.x)                       # calibrated, [N, K]
    confidence, predicted = probs.max(1)
    mask = eligible(predicted, confidence, critical, float(audit.tau))
    index = mask.nonzero().squeeze(1)
    items, conf_e = split.x[index], confidence[index]
    is_error = split.y[index] != critical                       # only used by the label oracle and metrics
    log.info("%d of %d %s items are predicted %r with confidence > %s (%d errors among them)",
             len(index), len(split.x), audit.split, target.class_names[critical], audit.tau, int(is_error.sum()))

    methods = [str(search.name)] + [m for m in plain(audit.compare, []) if m != search.name]
    facts: dict[str, Any] = {}
    item_scores: dict[str, torch.Tensor] = {}
    distances: dict[str, torch.Tensor] = {}
    low, high = attack_box(split.x, plain(audit.get("box", "auto"), "auto"))
    inputs = ScoreInputs(items, index, split.x, predicted, low, high, critical, target)
    for name in methods:
        if name in SCORED:
            method_cfg = search[name]
            mae, facts[name] = item_distances(name, method_cfg, inputs, out)
            distances[name] = distance_values(mae, bool(method_cfg.lowess.log))

    generator = torch.Generator().manual_seed(int(cfg.seed))
    interactive = str(cfg.get("oracle", "labels")) == "cli"
    replications = 1 if interactive else int(audit.replications)
    clamp = interactive or bool(audit.get("clamp_pool_size", False))  # pools as large as the data allow
    pool_size = min(int(audit.pool_size), len(index)) if clamp else int(audit.pool_size)
    if pool_size < int(audit.pool_size):
        log.info("pools of %d: only %d eligible items (audit.pool_size=%d)", pool_size, len(index), audit.pool_size)
    pools = draw_pools(len(index), pool_size, replications, generator)      # [R, P]
    for name, distance in distances.items():
        method_cfg = search[name]
        item_scores[name] = pool_scores(distance, conf_e, pools, typed(LowessConf, method_cfg.lowess))

    # table columns in different units count alike after range-normalisation; pixels stay as they are
    scaled = (items - inputs.low) / (inputs.high - inputs.low).clamp_min(1e-12) if items.dim() == 2 else items
    features = pca_features(scaled, int(audit.features.components))
    budget = min(int(audit.budget), pool_size)
    results = _completed(out)
    variance = float(search.bansal_weld.get("variance", 0.001))
    diameters = torch.cat([pool_diameter(features[pools[s:s + 100]]) for s in range(0, replications, 100)])
    chunk = int(audit.pool_chunk)
    for name in (methods[:1] if interactive else methods):
        if name in results:
            continue
        params = plain(search.get(name), {}) if name not in SCORED else {}
        started = time.perf_counter()
        positions, answers = [], []
        for start in range(0, replications, chunk):
            rows = slice(start, start + chunk)
            batch = PoolBatch(features[pools[rows]], conf_e[pools[rows]],
                              {k: v[rows] for k, v in item_scores.items()})
            oracle = (TerminalOracle(items, pools[0], index, target.class_names[critical], conf_e, out / "oracle")
                      if interactive else label_oracle(is_error[pools[rows]]))
            chosen, found = run_policy(build_policy(name, **params), batch, oracle, budget, generator)
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
        for k in plain(audit.report_at, []):
            if k <= budget:
                for measure in MEASURES:
                    if f"{measure}_mean" in record:
                        summary[f"search/{name}/{measure}@{k}"] = record[f"{measure}_mean"][k - 1]
        if name == search.name:
            summary.update({f"search/sdr@{k}": record["sdr_mean"][k - 1]
                            for k in plain(audit.report_at, []) if k <= budget})
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
