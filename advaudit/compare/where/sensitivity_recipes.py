"""The per-factor sensitivity between two recipes: every cell tested in every pair of files, and over the files.

Every file of both recipes scores the same held-out renders (:mod:`advaudit.compare.where.sensitivity`). Per file
``f`` and cell ``c`` (a fifth of a factor, or a band of distance from its reference:
:mod:`advaudit.compare.where.cells`) the file's own loss there, measured from its accuracy over all random conditions,

    L_f(c) = mean over instances of (acc_f,i(c) - acc_f,i),

is one number per training seed. The recipes' difference ``mean_A L - mean_B L`` (negative: A loses more there) is
the row's estimate, with Welch's 95% interval and t-test over the files (the training seed is the replication unit
of a recipe), Holm-corrected over the cells of the pair.

**When a cell is said.** With three files a recipe, Welch's test has 2-4 degrees of freedom and cannot survive Holm
over the 50-80 cells of a world even when every seed shows the same 12-point loss (the planted camera elevation on
the comparing results page: Welch p 0.0012, Holm over 78 cells 0.092). So a cell is said when **every pair of files**
(one of each recipe, ``k x l`` pairs) says it under the single-file rule, tested over the paired held-out instances
(:func:`advaudit.compare.where.interaction.interaction`: Wilcoxon, Holm over the cells of that pair of files,
interval beyond ``min_points``, the plain difference on the same side), every one in the direction of the recipes'
difference. Each pair of files is tested at ``alpha``: the claim "in every pair" is an intersection of those tests,
which holds at ``alpha`` without correcting across the pairs (Berger's intersection-union test). It is what every
training seed shows, not a model of the seeds' population: Welch's interval over the files is reported beside it, and
the strongest said cell is checked over the files on other held-out instances
(:func:`advaudit.compare.where.section.confirm_said_cells`). A weakness of one file, or a difference between files
of one recipe, is not said: the other pairs do not show it.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from advaudit.compare.where.cells import Cells, cell_fields
from advaudit.compare.where.interaction import interaction
from advaudit.compare.where.words import recipe_words
from advaudit.core.statistics import ALPHA, holm, welch_test


def recipe_interaction(a: str, b: str, sides: dict[str, tuple[str, ...]], cells: Sequence[Cells],
                       accuracy: Sequence[dict[str, np.ndarray]], overall: dict[str, np.ndarray],
                       alpha: float = ALPHA, min_points: float = 0.0) -> list[dict[str, Any]]:
    """The pair's rows over every cell (module docstring); ``accuracy``: per cells ``{unit: [n, k]}``, ``overall``:
    ``{unit: [n]}``."""
    rows = []
    for c, by_unit in zip(cells, accuracy):
        for k in range(len(c.bounds)):
            loss = {u: float(np.nanmean(by_unit[u][:, k] - overall[u])) for u in sides[a] + sides[b]}
            inside = {u: float(np.nanmean(by_unit[u][:, k])) for u in sides[a] + sides[b]}
            stats = welch_test([loss[u] for u in sides[a]], [loss[u] for u in sides[b]])
            sign = np.sign(stats["diff"])
            rows.append({"a": a, "b": b, **cell_fields(c, k), "design": "recipes",
                         "acc_a": float(np.mean([inside[u] for u in sides[a]])),
                         "acc_b": float(np.mean([inside[u] for u in sides[b]])),
                         "overall_a": float(np.mean([overall[u].mean() for u in sides[a]])),
                         "overall_b": float(np.mean([overall[u].mean() for u in sides[b]])),
                         "in_fifth": welch_test([inside[u] for u in sides[a]], [inside[u] for u in sides[b]]),
                         "pairs": len(sides[a]) * len(sides[b]),
                         "agree": int(sum(np.sign(loss[x] - loss[y]) == sign and sign != 0
                                          for x in sides[a] for y in sides[b])), **stats})
    holm(rows)
    _tested_in_every_pair(rows, sides[a], sides[b], cells, accuracy, overall, alpha, min_points)
    for row in rows:
        row["said"] = bool(row["pairs_said"] == row["pairs"])
        row["words"] = recipe_words(row, len(rows)) if row["said"] else ""
    return rows


def _tested_in_every_pair(rows: list[dict[str, Any]], files_a: Sequence[str], files_b: Sequence[str],
                          cells: Sequence[Cells], accuracy: Sequence[dict[str, np.ndarray]],
                          overall: dict[str, np.ndarray], alpha: float, min_points: float) -> None:
    """Sets each row's ``pairs_said`` (the pairs of files, one of each recipe, that say the cell over instances in
    the direction of the recipes' difference), ``n_instances`` and ``p_holm_pairs`` (the largest of their Holm
    p-values: the intersection-union test's p) in place; ``rows`` in the order of ``cells`` x their cells."""
    for row in rows:
        row.update(pairs_said=0, p_holm_pairs=0.0)
    for x in files_a:
        for y in files_b:
            for row, pair in zip(rows, interaction(x, y, cells, accuracy, overall, alpha, min_points,
                                                           every_interval=False)):
                row["n_instances"] = pair["n"]
                row["p_holm_pairs"] = float(np.maximum(row["p_holm_pairs"], pair["p_holm"]))   # NaN stays NaN
                row["pairs_said"] += int(pair["said"] and np.sign(pair["diff"]) == np.sign(row["diff"]) != 0)
