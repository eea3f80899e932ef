"""Where checkpoints differ: per class, and per factor (worst cases against random conditions).

Per factor, each checkpoint's worst cases are tested against uniform random conditions, one test
per searched factor, and the p-values of one checkpoint are Holm-corrected over its searched
factors (several factors are tested at once: with nine, one of them reaches p < 0.05 by chance
about a third of the time). On an interval the test is Kolmogorov-Smirnov's; on a periodic factor
(a circle) it is Kuiper's, whose statistic does not depend on where the circle is cut, so a
cluster straddling 0/360 deg is one cluster, found as surely as one at 180 deg.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import circmean, kstest

from advaudit.compare.design import Group
from advaudit.compare.metrics import Metric
from advaudit.compare.where.words import factor_verdict
from advaudit.core.intervals import mean_with_ci
from advaudit.core.statistics import ALPHA, holm, kuiper_uniform


def pooled_instances(group: Group, target: str, seeds: list[int]) -> pd.DataFrame | None:
    """The per-instance rows of ``target`` over ``seeds`` and every file of a recipe (``seed`` and ``file`` columns
    added), or None."""
    frames = []
    for seed in seeds:
        for number, run in enumerate(group.runs_at(target, seed)):
            frame = run.per_instance()
            if frame is not None:
                frames.append(frame.assign(seed=seed, file=number))
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


def densest_fifth(unit: np.ndarray, periodic: bool, grid: int = 200) -> tuple[float, float]:
    """``(centre, share)``: the window of a fifth of the range (an arc on a circle, wrapping across the
    seam) holding the largest share of ``unit`` points in [0, 1]."""
    unit = np.asarray(unit, dtype=float)
    centres = (np.arange(grid) + 0.5) / grid if periodic else np.linspace(0.1, 0.9, grid)
    diff = np.abs(unit[None, :] - centres[:, None])
    if periodic:
        diff = np.minimum(diff, 1 - diff)
    shares = (diff <= 0.1 + 1e-12).mean(1)
    best = int(shares.argmax())
    return float(centres[best]), float(shares[best])


def per_factor(group: Group, seeds: list[int], factors: list[Any], searched: list[str]) -> list[dict[str, Any]]:
    """Per checkpoint and searched factor: where the worst cases lie against uniform random conditions.

    Random conditions are uniform over each factor's range (how the examiners' random baseline
    and ``world.random_conditions`` draw them), so the reference distribution is exact. ``test`` /
    ``statistic`` / ``p``: Kolmogorov-Smirnov on an interval, Kuiper on a circle (module docstring);
    ``p_holm``: Holm-corrected over the checkpoint's searched factors; ``share_low`` / ``share_high``:
    the shares in the lowest / highest fifth of the range (0.2 each under random conditions);
    ``peak`` / ``share_peak``: the centre (factor units) and share of the densest fifth (an arc that
    may cross the seam on a circle); ``mean``: the circular mean on a circle; ``verdict``: in words.
    """
    rows = []
    for target in group.targets:
        frame = pooled_instances(group, target, seeds)
        if frame is None or "worst_s" not in frame:
            continue
        conditions = worst_conditions(frame)
        members = []
        for factor in factors:
            if factor.name not in searched or factor.name not in conditions:
                continue
            values = conditions[factor.name].astype(float).dropna().to_numpy()
            width = factor.high - factor.low
            if len(values) == 0 or width <= 0:
                continue
            periodic = bool(getattr(factor, "periodic", False))
            unit = (values - factor.low) / width
            if periodic:
                unit = np.mod(unit, 1.0)
                statistic, p = kuiper_uniform(unit)
                test, mean = "Kuiper", float(circmean(values, high=factor.high, low=factor.low))
            else:
                result = kstest(values, "uniform", args=(factor.low, width))
                test, statistic, p, mean = "KS", float(result.statistic), float(result.pvalue), float(values.mean())
            centre, share = densest_fifth(unit, periodic)
            members.append({"target": target, "factor": factor.name, "unit": factor.unit, "periodic": periodic,
                            "n": int(len(values)), "mean": mean, "share_low": float((unit < 0.2).mean()),
                            "share_high": float((unit > 0.8).mean()), "peak": float(factor.low + centre * width),
                            "share_peak": share, "test": test, "statistic": statistic, "p": p,
                            "values": values.tolist()})
        holm_over_factors(members)
        rows += members
    return rows


def holm_over_factors(rows: list[dict[str, Any]], alpha: float = ALPHA) -> None:
    """Add ``p_holm`` (Holm over these rows: one checkpoint's factors) and a plain-words ``verdict``."""
    for row in holm(rows):
        row["verdict"] = factor_verdict(row, len(rows), alpha)


def searched_factors(factors: list[Any], design: dict[str, Any]) -> list[str]:
    """Names of the factors the examiner searched (not fixed, not drawn once per instance)."""
    fixed_random = set((design.get("audit") or {}).get("fixed_random") or [])
    return [f.name for f in factors if f.low != f.high and f.name not in fixed_random]


def uniform_reference(factor: Any, n: int, seed: int = 0) -> np.ndarray:
    """``[n]`` random conditions of ``factor`` (uniform over its range), for the histograms."""
    return np.random.default_rng(seed).uniform(factor.low, factor.high, size=n)
