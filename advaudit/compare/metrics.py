"""The metrics each audit is compared on, their direction, and their per-instance counterparts."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from advaudit.compare.records import RunRecord


@dataclass(frozen=True)
class Metric:
    """A headline number of an audit.

    Attributes:
        key: the result.json key (``examine/worst``).
        higher_is_better: for the checkpoint (``None``: no direction, e.g. an error-search SDR,
            which describes the search method more than the model).
        column: the per-instance column whose mean it is (``None``: only run-level values).
        binary: the column is a 0/1 outcome (paired test: McNemar, not Wilcoxon).
        label: words for the report.
        low, high: the metric's floor and ceiling (``None``: unbounded on that side), where a
            checkpoint's score stops telling it apart from another (every worst case at 0.00, every
            instance failed): :mod:`advaudit.compare.verdict` says so instead of naming a weaker one.
    """

    key: str
    higher_is_better: bool | None
    column: str | None = None
    binary: bool = False
    label: str = ""
    low: float | None = 0.0
    high: float | None = 1.0

    @property
    def words(self) -> str:
        return self.label or self.key


#: each audit's metrics, its primary question first (the one used when runs declare none: ``audit.metric``)
FIXED: dict[str, list[Metric]] = {
    "worst_case": [
        Metric("examine/E_T_valid", True, "E_T_valid",
               label="E_T inside S (true-class probability of the final proposals that keep the label)"),
        Metric("examine/E_T", True, "E_T", label="E_T (true-class probability of all final proposals, the paper's)"),
        Metric("examine/worst", True, "worst", label="worst true-class probability found"),
        Metric("examine/failure_rate", False, "failed", binary=True, label="share of instances failed"),
        Metric("examine/random_accuracy", True, "random_accuracy", label="accuracy under random conditions"),
        Metric("examine/invalid_share", None, label="share of invalid proposals"),
    ],
    "evaluate": [
        Metric("evaluate/acc", True, "correct", binary=True, label="accuracy"),
        Metric("evaluate/mean_true_prob", True, "true_prob", label="mean true-class probability"),
        Metric("evaluate/ece", False, label="expected calibration error"),
        Metric("evaluate/worst_class_acc", True, label="worst-class accuracy"),
    ],
}
#: (key pattern, higher is better, words, ceiling). SDR (errors found over errors the confidence
#: predicts, adversarial-distance paper Eq. 3) is 1 when a model's errors are as frequent as its
#: confidence says and above 1 when it is overconfident: within one group (one search method, one
#: pool) a higher SDR is a checkpoint whose confident mistakes are easier to find, i.e. weaker.
PATTERNS: dict[str, list[tuple[str, bool | None, str, float | None]]] = {
    "error_search": [(r"^search/[^/]+/sdr@\d+$", False, "SDR", None), (r"^search/sdr@\d+$", False, "SDR", None)],
    "fault_tests": [(r"^faults/[^/]+/success$", False, "fault-test success", 1.0),
                    (r"^faults/[^/]+/transfer_acc/.+$", None, "accuracy on transferred tests", 1.0)],
}


def metrics_for(audit: str, runs: list[RunRecord]) -> list[Metric]:
    """The metrics of ``audit`` present in ``runs`` (as result keys or per-instance columns)."""
    keys = set().union(*(r.metrics for r in runs)) if runs else set()
    columns: set[str] = set()
    for run in runs[:1]:
        frame = run.per_instance()
        columns = set(frame.columns) if frame is not None else set()
    if audit in FIXED:
        return [m for m in FIXED[audit] if m.key in keys or (m.column and m.column in columns)]
    found = [Metric(k, better, label=f"{words} ({k})", high=high) for pattern, better, words, high in
             PATTERNS.get(audit, []) for k in sorted(keys) if re.match(pattern, k)]
    if found:
        return found
    configured = (runs[0].config.get("audit") or {}).get("metric") if runs else None
    return [Metric(str(configured), None, low=None, high=None)] if configured in keys else []


def run_value(run: RunRecord, metric: Metric) -> float:
    """The run's value of ``metric``: its result key, else the mean of its per-instance column."""
    if metric.key in run.result and isinstance(run.result[metric.key], (int, float)):
        return float(run.result[metric.key])
    values = instance_values(run, metric)
    return float(np.mean(values)) if values is not None and len(values) else float("nan")


def instance_values(run: RunRecord, metric: Metric):
    """``[N]`` per-instance values of ``metric`` as floats (failure/correct as 0/1), or None."""
    frame = run.per_instance()
    if metric.column is None or frame is None or metric.column not in frame:
        return None
    return frame[metric.column].astype(float).to_numpy()
