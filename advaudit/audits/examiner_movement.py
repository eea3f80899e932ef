"""Did the examiner examine? How far its final proposals moved from T = 0, per instance, with an interval.

An examiner whose proposals did not move from T = 0 measured nothing but the model under random
conditions. T = 0 is the standard protocol (the paper's Table 2, column T = 0): each instance's own
random conditions, drawn by the audit after the examination (``fresh_conditions.pt``: the same conditions for
every checkpoint examined alike). Per instance ``i``:

    moved_i       = E_T-inside-S_i - mean true-class probability of i's *valid* random conditions
    moved_paper_i = E_T_i          - mean true-class probability of all of i's random conditions

(:mod:`advaudit.audits.examiner_metrics` defines both E_T). Their means over the instances that have both
get a 95% bootstrap interval and a Wilcoxon signed-rank p-value. The examiner **moved** when the p-value is
below 0.05 and the interval lies on the side it searches towards (below 0 in ``mode=weakness``, above in
``mode=strength``); otherwise every report warns that it did not.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from advaudit.core.intervals import format_interval, mean_with_ci
from advaudit.core.statistics import ALPHA, format_p, signed_rank_test


def random_baselines(fresh: dict[str, Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(valid, all)``, each ``[N]``: an instance's mean true-class probability over its valid random conditions
    (NaN where none is valid) and over all of them (NaN for a record that predates ``random_true_prob``)."""
    if "random_true_prob" not in fresh:
        return np.full(n, np.nan), np.full(n, np.nan)
    p = fresh["random_true_prob"].numpy().reshape(n, -1).astype(float)
    ok = fresh["random_valid"].numpy().reshape(n, -1).astype(bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        valid = np.where(ok.any(1), (p * ok).sum(1) / np.maximum(ok.sum(1), 1), np.nan)
    return valid, p.mean(1)


def movement(final: np.ndarray, baseline: np.ndarray, strength: bool, seed: int = 0) -> dict[str, Any]:
    """``final - baseline`` ``[N]`` summarised: ``mean``, ``lo``, ``hi``, ``n``, ``p`` and ``moved`` (module docstring)."""
    diffs = np.asarray(final, float) - np.asarray(baseline, float)
    diffs = diffs[np.isfinite(diffs)]
    out: dict[str, Any] = {**mean_with_ci(diffs, seed=seed), "p": float("nan"), "moved": False}
    if len(diffs) and np.any(diffs != 0):
        out["p"] = signed_rank_test(diffs)[1]
    towards = out["lo"] > 0 if strength else out["hi"] < 0
    out["moved"] = bool(math.isfinite(out["p"]) and out["p"] < ALPHA and towards)
    return out


def movement_words(summary: dict[str, Any], metric: str, examiner: str) -> str:
    """One sentence: how far ``metric`` moved from T = 0 (random conditions), or the warning that it did not."""
    if not summary.get("n"):
        return f"{metric} could not be compared with T = 0 (no instance has both a valid final and a valid random view)."
    shift = (f"{metric} moved {format_interval(summary['mean'], summary['lo'], summary['hi'], 3, sign=True)} from "
             f"T = 0 (random conditions) over {summary['n']} instances (Wilcoxon p = {format_p(summary['p'])})")
    if summary["moved"]:
        return shift + "."
    return (f"Warning: the {examiner} examiner did not move from T = 0: {shift}. Its {metric} measures the model "
            "under random conditions, not its worst case: raise audit.budget or the examiner's learning rate "
            "(docs/examiners.md).")


def examination_movement(per_instance_final: dict[str, np.ndarray], fresh: dict[str, Any], strength: bool,
                         examiner: str, seed: int = 0) -> dict[str, Any]:
    """Result keys: ``examine/E_T_valid_random`` (T = 0 inside S), ``examine/E_T_valid_moved`` and
    ``examine/E_T_moved`` (+ ``/lo``, ``/hi``, ``/p``), ``examiner_moved`` and ``examiner_moved_words``;
    ``per_instance_final``: ``{"E_T_valid": [N], "E_T": [N]}``."""
    n = len(per_instance_final["E_T"])
    valid_baseline, all_baseline = random_baselines(fresh, n)
    inside = movement(per_instance_final["E_T_valid"], valid_baseline, strength, seed)
    paper = movement(per_instance_final["E_T"], all_baseline, strength, seed)
    out: dict[str, Any] = {"examine/E_T_valid_random": float(np.nanmean(valid_baseline))
                           if np.isfinite(valid_baseline).any() else None}
    for key, summary in (("examine/E_T_valid_moved", inside), ("examine/E_T_moved", paper)):
        out.update({key: summary["mean"], f"{key}/lo": summary["lo"], f"{key}/hi": summary["hi"],
                    f"{key}/p": summary["p"]})
    out["examiner_moved"] = inside["moved"]
    out["examiner_moved_words"] = movement_words(inside, "E_T inside S", examiner)
    out["random_baseline_valid"] = valid_baseline
    return out
