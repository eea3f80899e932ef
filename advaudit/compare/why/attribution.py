"""The statistics of an attribution: the gap between two checkpoints and the part of it each intervention explains.

Accuracies are in [0, 1] (the sentences say points). For checkpoints ``A`` and ``B`` on the renders of
:mod:`advaudit.compare.why.measure` (``n`` instances x ``m`` conditions, the same images for both):

    gap        G   = acc_A(as drawn) - acc_B(as drawn)
    remaining  G_K = acc_A(K at reference) - acc_B(K at reference)      (the same conditions, K taken away)
    explained  E_K = G - G_K

``E_K`` has the sign of ``G`` where K **explains** part of the gap and the other sign where it **hides** part of
it. Its uncertainty comes from what replicates it:

- **files**: each side is one checkpoint file (or a recipe against one file): per held-out instance ``i``, the
  gap ``g_i`` (mean over its ``m`` conditions, the side's files pooled) and ``e_i = g_i - g_i^K``; the mean over
  instances with a 95% bootstrap interval and Wilcoxon's signed-rank p. A finding is about these files: two
  training seeds of one recipe can differ as much.
- **recipes**: both sides are recipes of two or more files (training seeds, the replication unit of a recipe):
  per file ``f`` its accuracy as drawn and its gain ``d_f(K) = acc_f(K) - acc_f``; ``E_K = mean_B d - mean_A d``
  with Welch's t-test and its 95% interval over the files of the two recipes (scipy's ``ttest_ind``,
  ``equal_var=False``). Every pair ``(a, b)`` of files must agree on the sign (``d_b - d_a``): what every
  training seed shows, not what their mean shows.

p-values are Holm-corrected over the interventions of the pair. An intervention is **said** when its corrected p
is below ``alpha``, its interval excludes 0, its effect is at least ``min_points`` accuracy points and (recipes)
every pair of files agrees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from advaudit.compare.why.measure import AS_DRAWN, Measured
from advaudit.compare.why.plan import Intervention
from advaudit.core.statistics import ALPHA, holm, paired_mean_test, welch_test


@dataclass(frozen=True)
class Sides:
    """Two checkpoints as the report names them (``a``, ``b``) and the files (units of :class:`Measured`) of each."""

    a: str
    b: str
    a_units: tuple[str, ...]
    b_units: tuple[str, ...]

    @property
    def design(self) -> str:
        """``recipes`` (both sides two or more files), else ``files``."""
        return "recipes" if min(len(self.a_units), len(self.b_units)) >= 2 else "files"


def instance_accuracy(measured: Measured, key: str, units: Sequence[str]) -> np.ndarray:
    """``[n]`` each instance's accuracy over its conditions, the ``units`` pooled (their mean)."""
    return np.mean([measured.correct[key][u].mean(1) for u in units], axis=0)


def gap_of(measured: Measured, sides: Sides) -> dict[str, Any]:
    """The gap ``A - B`` as drawn (module docstring), with each side's accuracy."""
    acc = {sides.a: float(np.mean([measured.accuracy(AS_DRAWN, u) for u in sides.a_units])),
           sides.b: float(np.mean([measured.accuracy(AS_DRAWN, u) for u in sides.b_units]))}
    if sides.design == "recipes":
        stats = welch_test([measured.accuracy(AS_DRAWN, u) for u in sides.a_units],
                           [measured.accuracy(AS_DRAWN, u) for u in sides.b_units])
    else:
        g = instance_accuracy(measured, AS_DRAWN, sides.a_units) - instance_accuracy(measured, AS_DRAWN, sides.b_units)
        stats = paired_mean_test(g, np.zeros_like(g))
    return {**stats, "accuracy": acc, "test": "Welch t over files" if sides.design == "recipes" else "Wilcoxon"}


def explained_by(measured: Measured, sides: Sides, k: Intervention) -> dict[str, Any]:
    """The part of the gap intervention ``k`` explains (module docstring), with ``agree``/``pairs`` for recipes."""
    row: dict[str, Any] = {**k.as_dict(), "accuracy": {
        sides.a: float(np.mean([measured.accuracy(k.name, u) for u in sides.a_units])),
        sides.b: float(np.mean([measured.accuracy(k.name, u) for u in sides.b_units]))}}
    if sides.design == "recipes":
        gain = {u: measured.accuracy(k.name, u) - measured.accuracy(AS_DRAWN, u) for u in sides.a_units + sides.b_units}
        stats = welch_test([gain[u] for u in sides.b_units], [gain[u] for u in sides.a_units])
        sign = np.sign(stats["diff"])
        row["pairs"] = len(sides.a_units) * len(sides.b_units)
        row["agree"] = int(sum(np.sign(gain[b] - gain[a]) == sign and sign != 0
                               for a in sides.a_units for b in sides.b_units))
        row["gain"] = gain
    else:
        g = instance_accuracy(measured, AS_DRAWN, sides.a_units) - instance_accuracy(measured, AS_DRAWN, sides.b_units)
        g_k = instance_accuracy(measured, k.name, sides.a_units) - instance_accuracy(measured, k.name, sides.b_units)
        stats = paired_mean_test(g, g_k)
    return {**row, **stats}


def said(row: dict[str, Any], alpha: float = ALPHA, min_points: float = 0.0) -> bool:
    """Said (module docstring): corrected p below ``alpha``, interval excluding 0, at least ``min_points`` points,
    and (recipes) every pair of files agreeing."""
    if not (math.isfinite(row.get("p_holm", float("nan"))) and row["p_holm"] < alpha):
        return False
    if not (row["lo"] > 0 or row["hi"] < 0) or abs(row["diff"]) < min_points / 100:
        return False
    return row.get("agree", 0) == row.get("pairs", 0)


def relation(explained: float, gap: float) -> str:
    """``explains`` (same sign as the gap), ``hides`` (the other sign) or ``opens`` (no gap as drawn)."""
    if gap == 0 or not math.isfinite(gap):
        return "opens"
    return "explains" if np.sign(explained) == np.sign(gap) else "hides"


def attribute(measured: Measured, plan: Sequence[Intervention], sides: Sides, alpha: float = ALPHA,
              min_points: float = 1.0) -> dict[str, Any]:
    """The attribution of one pair: ``gap``, ``rows`` (one per intervention, Holm over them, ``said``, ``relation``,
    ``remaining``) and ``headline`` (:func:`headline_of`), or None."""
    gap = gap_of(measured, sides)
    rows = [explained_by(measured, sides, k) for k in plan]
    holm(rows)
    for row in rows:
        row["remaining"] = gap["diff"] - row["diff"]
        row["relation"] = relation(row["diff"], gap["diff"])
        row["said"] = said(row, alpha, min_points)
    headline = headline_of(rows, gap["diff"])
    return {"a": sides.a, "b": sides.b, "design": sides.design, "files": {sides.a: list(sides.a_units),
            sides.b: list(sides.b_units)}, "gap": gap, "rows": rows,
            "headline": headline["name"] if headline else None}


#: a said intervention explaining at least this share of the gap (or of the most any said one explains, when that
#: is less) is "most of it"
MOST = 0.8


def headline_of(rows: list[dict[str, Any]], gap: float | None = None) -> dict[str, Any] | None:
    """The said row that names the cause: among those that explain at least :data:`MOST` of the gap ``gap`` (or of
    the largest part any said row explains, when that is smaller or ``gap`` is None), the one with the fewest
    factors (then the larger part); None when nothing is said to explain the gap. Measured against the gap, a group
    that explains more than all of it (the other checkpoint worse on the reference views) does not outrank the one
    factor that explains most of it."""
    explaining = [r for r in rows if r["said"] and r["relation"] == "explains"]
    if not explaining:
        return None
    largest = max(abs(r["diff"]) for r in explaining)
    bar = MOST * (largest if gap is None else min(largest, abs(gap)))
    most = [r for r in explaining if abs(r["diff"]) >= bar]
    return min(most, key=lambda r: (len(r["factors"]), -abs(r["diff"])))
