"""Per-checkpoint intervals and paired differences between checkpoints (the tests: :mod:`advaudit.core.statistics`).

Intervals are percentile bootstraps (:mod:`advaudit.core.intervals`) over independent
replications: over seeds when a checkpoint was examined with several seeds (each seed is a whole
new examination), over instances when there is one seed. Paired tests work on the instances both
checkpoints were examined on:

- continuous per-instance scores (worst true-class probability, E_T, true-class probability):
  Wilcoxon signed-rank on the per-instance differences, each instance's score first averaged
  over the seeds it was examined in (so an instance counts once);
- per-instance outcomes (failed / correct): McNemar's test on the discordant (instance, seed)
  pairs, exact binomial when there are fewer than 25 of them;
- metrics with only run-level values (ECE, SDR, success rates): Wilcoxon over seeds, which needs
  6 or more seeds to reach p < 0.05 (with fewer the report says so and gives the interval only).

Two **recipes** (labels with two or more checkpoint files each, one per training seed: the replication
unit of a recipe) are compared over their files: each file's value (the mean over its runs) and Welch's
t-test with its 95% interval (:func:`recipe_difference`), whether or not the files were examined at matching
seeds. A test over instances would take two files' own difference for the recipes'.

The primary question is tested first and alone: its p-values are Holm-corrected over the pairs compared
(one test per pair), and only it gives verdicts. Every other metric is evidence for or against them: its
p-values are Holm-corrected over their own family (pairs x the other metrics). A verdict is thus wrong with
probability at most 5% whatever else is reported, and the evidence does not cost the question asked power
(a recipe over three training seeds has 4 degrees of freedom; six metrics in one family halved what it could
detect: docs/results/compare/comparing.md). :mod:`advaudit.compare.verdict` reads the two families and says them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import ttest_1samp

from advaudit.compare.design import Group
from advaudit.compare.metrics import Metric, instance_values, run_value
from advaudit.core.intervals import mean_with_ci
from advaudit.core.statistics import holm, mcnemar_test, signed_rank_test, welch_test


def file_values(group: Group, target: str, metric: Metric) -> list[float]:
    """``metric`` per checkpoint file of ``target`` (a recipe: one value per training seed), each the mean over
    the file's runs (examination seeds); files without a value are left out."""
    values = [[run_value(r, metric) for r in group.file_runs(target, source)] for source in group.files(target)]
    return [float(np.nanmean(v)) for v in values if np.isfinite(v).any()]


def recipe_summary(group: Group, target: str, metric: Metric) -> dict[str, Any]:
    """A recipe's mean of ``metric`` over its files with Student's 95% interval (a bootstrap of 3 values would
    be far too narrow)."""
    values = np.asarray(file_values(group, target, metric), float)
    row: dict[str, Any] = {"target": target, "metric": metric.key, "n_seeds": len(group.seeds(target)),
                           "n_files": int(len(values)), "mean": float(values.mean()) if len(values) else float("nan"),
                           "interval_over": f"{len(values)} files (training seeds)"}
    if len(values) >= 2 and np.ptp(values) > 0:
        interval = ttest_1samp(values, 0.0).confidence_interval(0.95)
        return {**row, "lo": float(interval.low), "hi": float(interval.high),
                "sd_over_files": float(values.std(ddof=1))}
    return {**row, "lo": row["mean"], "hi": row["mean"]}


def recipe_difference(group: Group, a: str, b: str, metric: Metric) -> dict[str, Any]:
    """Recipes ``a`` and ``b`` (two or more files each) on ``metric``: Welch over their files
    (:func:`advaudit.core.statistics.welch_test`)."""
    xa, xb = file_values(group, a, metric), file_values(group, b, metric)
    stats = welch_test(xa, xb)
    row = {"a": a, "b": b, "metric": metric.key, "higher_is_better": metric.higher_is_better,
           "n_seeds": len(set(group.seeds(a)) | set(group.seeds(b))), "n_files": stats["n"],
           "n_instances": 0, "diff": stats["diff"], "lo": stats["lo"], "hi": stats["hi"],
           "interval_over": f"files (training seeds): {len(xa)} and {len(xb)}", "test": "Welch t over files",
           "statistic": float("nan"), "p": stats["p"], "units": "files"}
    diffs = [x - y for x in xa for y in xb]
    row["max_abs_diff"] = float(np.max(np.abs(diffs))) if diffs and np.isfinite(diffs).all() else float("nan")
    return row


def checkpoint_summary(group: Group, target: str, metric: Metric, seeds: list[int]) -> dict[str, Any]:
    """Mean of ``metric`` over ``seeds`` with a 95% interval (over seeds, or instances for one seed); a recipe's
    over its files (:func:`recipe_summary`)."""
    if group.is_recipe(target):
        return recipe_summary(group, target, metric)
    runs = [group.run(target, s) for s in seeds]
    values = np.array([run_value(r, metric) for r in runs if r is not None], dtype=float)
    row: dict[str, Any] = {"target": target, "metric": metric.key, "n_seeds": int(np.isfinite(values).sum())}
    if row["n_seeds"] >= 2:
        stats = mean_with_ci(values)
        return {**row, "mean": stats["mean"], "lo": stats["lo"], "hi": stats["hi"], "interval_over": "seeds",
                "sd_over_seeds": float(np.nanstd(values, ddof=1))}
    run = runs[0] if runs else None
    per_instance = instance_values(run, metric) if run is not None else None
    mean = float(values[0]) if len(values) else float("nan")
    if per_instance is not None and len(per_instance) >= 2:
        stats = mean_with_ci(per_instance)
        return {**row, "mean": mean, "lo": stats["lo"], "hi": stats["hi"], "interval_over": "instances"}
    if run is not None and f"{metric.key}/lo" in run.result and run.result[f"{metric.key}/lo"] is not None:
        return {**row, "mean": mean, "lo": float(run.result[f"{metric.key}/lo"]),
                "hi": float(run.result[f"{metric.key}/hi"]), "interval_over": "instances (from the audit)"}
    return {**row, "mean": mean, "lo": float("nan"), "hi": float("nan"), "interval_over": "none (one run)"}


def paired_frame(group: Group, a: str, b: str, metric: Metric, seeds: list[int]) -> pd.DataFrame:
    """Rows ``(seed, instance, a, b)``: both checkpoints' per-instance values on shared instances."""
    parts = []
    for seed in seeds:
        run_a, run_b = group.run(a, seed), group.run(b, seed)
        if run_a is None or run_b is None:
            continue
        va, vb = instance_values(run_a, metric), instance_values(run_b, metric)
        if va is None or vb is None:
            continue
        fa = pd.DataFrame({"instance": run_a.per_instance()["instance"], "a": va})
        fb = pd.DataFrame({"instance": run_b.per_instance()["instance"], "b": vb})
        parts.append(fa.merge(fb, on="instance").assign(seed=seed))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["instance", "a", "b", "seed"])


def paired_difference(group: Group, a: str, b: str, metric: Metric, seeds: list[int]) -> dict[str, Any]:
    """Difference ``a - b`` of ``metric`` with a 95% interval and a paired test (module docstring); two recipes
    over their files (:func:`recipe_difference`)."""
    if group.is_recipe(a) and group.is_recipe(b):
        return recipe_difference(group, a, b, metric)
    per_seed = [(run_value(group.run(a, s), metric), run_value(group.run(b, s), metric))
                for s in seeds if group.run(a, s) is not None and group.run(b, s) is not None]
    seed_diffs = np.array([x - y for x, y in per_seed], dtype=float)
    seed_diffs = seed_diffs[np.isfinite(seed_diffs)]
    pairs = paired_frame(group, a, b, metric, seeds)
    row: dict[str, Any] = {"a": a, "b": b, "metric": metric.key, "higher_is_better": metric.higher_is_better,
                           "n_seeds": int(len(seed_diffs)),
                           "n_instances": int(pairs["instance"].nunique()) if len(pairs) else 0}
    if len(seed_diffs) >= 2:
        stats = mean_with_ci(seed_diffs)
        row.update(diff=stats["mean"], lo=stats["lo"], hi=stats["hi"], interval_over="seeds")
    elif len(pairs) >= 2:
        # the estimate its interval and test are about: the mean paired difference over the shared instances
        # (a run's own value may pool proposals, or hold instances the other run has no value for)
        stats = mean_with_ci((pairs["a"] - pairs["b"]).to_numpy(float))
        row.update(diff=stats["mean"], lo=stats["lo"], hi=stats["hi"], interval_over="instances")
    else:
        row.update(diff=float(seed_diffs[0]) if len(seed_diffs) else float("nan"), lo=float("nan"),
                   hi=float("nan"), interval_over="none")
    row.update(paired_test(pairs, seed_diffs, metric))
    diffs = (pairs["a"] - pairs["b"]).to_numpy(float) if len(pairs) else seed_diffs
    row["max_abs_diff"] = float(np.max(np.abs(diffs))) if len(diffs) and np.isfinite(diffs).all() else float("nan")
    if metric.column == "failed":
        runs = [group.run(t, s) for s in seeds for t in (a, b) if group.run(t, s) is not None]
        row["fails_where_judged"] = bool(runs) and all(fails_exactly_where_judged(run) for run in runs)
    return row


def fails_exactly_where_judged(run: Any) -> bool:
    """True when every instance of ``run`` with a valid view (a finite ``worst``: the lowest true-class
    probability among the proposals the check kept) failed, and some instance had none: the failure rate
    is then the share of instances the validity check could judge."""
    frame = run.per_instance() if run is not None else None
    if frame is None or "worst" not in frame or "failed" not in frame:
        return False
    judged = np.isfinite(pd.to_numeric(frame["worst"], errors="coerce").to_numpy(float))
    return bool(0 < judged.sum() < len(judged) and (frame["failed"].to_numpy(bool) == judged).all())


def paired_test(pairs: pd.DataFrame, seed_diffs: np.ndarray, metric: Metric) -> dict[str, Any]:
    """``{"test", "statistic", "p", ...}``: McNemar, Wilcoxon on instances, or Wilcoxon on seeds."""
    if len(pairs) and metric.binary:
        return {**mcnemar_test(pairs["a"].to_numpy(), pairs["b"].to_numpy()), "units": "instance x seed"}
    if len(pairs):
        means = pairs.groupby("instance")[["a", "b"]].mean()
        return {**_wilcoxon(means["a"].to_numpy() - means["b"].to_numpy()), "units": "instances"}
    if len(seed_diffs) >= 2:
        out = {**_wilcoxon(seed_diffs), "units": "seeds"}
        if len(seed_diffs) < 6:
            out["note"] = f"{len(seed_diffs)} seeds: Wilcoxon over seeds cannot reach p < 0.05 below 6 seeds"
        return out
    return {"test": "none", "statistic": float("nan"), "p": float("nan"), "units": "none"}


def _wilcoxon(diffs: np.ndarray) -> dict[str, Any]:
    statistic, p = signed_rank_test(diffs)
    return {"test": "Wilcoxon signed-rank", "statistic": statistic, "p": p}


def compare_pairs(group: Group, metrics: list[Metric], seeds: list[int], primary: str | None = None) -> list[dict[str, Any]]:
    """Every pair of the group's plan x metric. With a ``primary`` metric, its tests are one Holm family (over the
    pairs) and the other metrics' tests another (the evidence); without, all are one family. Each row gets
    ``family`` and ``family_size``."""
    rows = [paired_difference(group, a, b, m, seeds)
            for a, b in group.pairs() for m in metrics]
    families = ([[r for r in rows if r["metric"] == primary], [r for r in rows if r["metric"] != primary]]
                if primary else [rows])
    for number, family in enumerate(families):
        holm(family)
        size = sum(1 for r in family if math.isfinite(r.get("p", float("nan"))))
        for row in family:
            row.update(family=("primary" if number == 0 else "evidence") if primary else "all", family_size=size)
    return rows
