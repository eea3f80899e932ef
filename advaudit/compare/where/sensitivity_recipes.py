"""The per-factor sensitivity between two recipes: every cell tested over the recipes' files.

Every file of both recipes scores the same held-out renders (:mod:`advaudit.compare.where.sensitivity`). Per file
``f`` and cell ``c`` (a fifth of a factor, or a band of distance from its reference:
:mod:`advaudit.compare.where.cells`) the file's own loss there, measured from its accuracy over all random conditions,

    L_f(c) = mean over instances of (acc_f,i(c) - acc_f,i),

is one number per training seed. The recipes' difference ``mean_A L - mean_B L`` (negative: A loses more
there) gets Welch's t-test and 95% interval over the files, Holm-corrected over the cells of the pair; the
plain difference in the cell (``acc_A(c) - acc_B(c)``) is tested the same way. A cell is **said** under the
single-file rule (:func:`advaudit.compare.where.cells.said`) and only when every pair of files (one of each
recipe) agrees on the sign: what every training seed shows.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from advaudit.compare.where.cells import Cells, cell_fields, said
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
    for row in rows:
        row["said"] = bool(said(row, alpha, min_points) and row["agree"] == row["pairs"])
        row["words"] = recipe_words(row, len(rows)) if row["said"] else ""
    return rows
