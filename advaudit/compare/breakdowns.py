"""Where checkpoints differ: per class, and per factor (worst cases against random conditions)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kstest

from advaudit.compare.design import Group
from advaudit.compare.metrics import Metric
from advaudit.report.intervals import mean_with_ci


def pooled_instances(group: Group, target: str, seeds: list[int]) -> pd.DataFrame | None:
    """The per-instance rows of ``target`` over ``seeds`` (a ``seed`` column added), or None."""
    frames = []
    for seed in seeds:
        run = group.run(target, seed)
        frame = run.per_instance() if run is not None else None
        if frame is not None:
            frames.append(frame.assign(seed=seed))
    return pd.concat(frames, ignore_index=True) if frames else None


def per_class(group: Group, metric: Metric, seeds: list[int], class_names: list[str] | None) -> list[dict[str, Any]]:
    """Per checkpoint and class: mean of ``metric``'s per-instance column with a 95% interval.

    The interval is over instances of the class (pooled over seeds); classes with few instances
    get wide intervals, which is the honest answer.
    """
    rows = []
    for target in group.targets:
        frame = pooled_instances(group, target, seeds)
        if frame is None or metric.column not in frame:
            continue
        classes = frame["class"] if "class" in frame else frame["label"].map(
            lambda y: class_names[int(y)] if class_names and int(y) < len(class_names) else str(int(y)))
        for name, values in frame[metric.column].astype(float).groupby(classes):
            stats = mean_with_ci(values.to_numpy())
            rows.append({"target": target, "class": str(name), "metric": metric.key, **stats})
    return rows


def worst_conditions(frame: pd.DataFrame) -> pd.DataFrame:
    """``[N, C]`` table of each row's ``worst_s`` (factor units), one column per factor."""
    values = [s if isinstance(s, dict) else {} for s in frame.get("worst_s", pd.Series(dtype=object))]
    return pd.DataFrame(values, index=frame.index)


def per_factor(group: Group, seeds: list[int], factors: list[Any], searched: list[str]) -> list[dict[str, Any]]:
    """Per checkpoint and searched factor: where the worst cases lie against uniform random conditions.

    Random conditions are uniform over each factor's range (how the examiners' random baseline
    and ``world.random_conditions`` draw them), so the reference distribution is exact: the
    Kolmogorov-Smirnov statistic and p-value test whether the worst cases are spread like random
    conditions; ``share_low`` / ``share_high`` are the shares in the lowest / highest fifth of
    the range (0.2 each under random conditions).
    """
    rows = []
    for target in group.targets:
        frame = pooled_instances(group, target, seeds)
        if frame is None or "worst_s" not in frame:
            continue
        conditions = worst_conditions(frame)
        for factor in factors:
            if factor.name not in searched or factor.name not in conditions:
                continue
            values = conditions[factor.name].astype(float).dropna().to_numpy()
            width = factor.high - factor.low
            if len(values) == 0 or width <= 0:
                continue
            unit = (values - factor.low) / width
            test = kstest(values, "uniform", args=(factor.low, width))
            rows.append({"target": target, "factor": factor.name, "n": int(len(values)),
                         "mean": float(values.mean()), "share_low": float((unit < 0.2).mean()),
                         "share_high": float((unit > 0.8).mean()), "ks": float(test.statistic),
                         "ks_p": float(test.pvalue), "values": values.tolist()})
    return rows


def searched_factors(factors: list[Any], design: dict[str, Any]) -> list[str]:
    """Names of the factors the examiner searched (not fixed, not drawn once per instance)."""
    fixed_random = set((design.get("audit") or {}).get("fixed_random") or [])
    return [f.name for f in factors if f.low != f.high and f.name not in fixed_random]


def uniform_reference(factor: Any, n: int, seed: int = 0) -> np.ndarray:
    """``[n]`` random conditions of ``factor`` (uniform over its range), for the histograms."""
    return np.random.default_rng(seed).uniform(factor.low, factor.high, size=n)
