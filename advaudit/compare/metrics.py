"""The metrics a group of runs is compared on, read from its audit's card, and their per-instance values."""

from __future__ import annotations

import numpy as np

from advaudit.audits.cards import audit_card
from advaudit.compare.records import RunRecord
from advaudit.config.audit_card import Metric

__all__ = ["Metric", "instance_values", "metrics_for", "run_value"]


def metrics_for(audit: str, runs: list[RunRecord]) -> list[Metric]:
    """The metrics of ``audit`` present in ``runs`` (as result keys or per-instance columns): the ones its card
    declares (:class:`advaudit.config.audit_card.AuditCard`), primary first, else the keys its patterns match,
    else the runs' configured ``audit.metric`` (no direction)."""
    keys = set().union(*(r.metrics for r in runs)) if runs else set()
    columns: set[str] = set()
    for run in runs[:1]:
        frame = run.per_instance()
        columns = set(frame.columns) if frame is not None else set()
    card = audit_card(audit)
    if card is not None and card.metrics:
        return [m for m in card.metrics if m.key in keys or (m.column and m.column in columns)]
    found = [m for pattern in (card.patterns if card else ()) for m in pattern.metrics(keys)]
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
