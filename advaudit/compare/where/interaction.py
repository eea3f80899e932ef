"""The checkpoint x cell difference of two checkpoints over paired held-out instances
(:mod:`advaudit.compare.where.sensitivity` defines it): per cell, how many accuracy points more one checkpoint loses
there than the other, each measured from its own accuracy over all random conditions, tested over instances
(Wilcoxon, Holm over the cells). Two files are compared this way; two recipes are compared pair of files by pair of
files (:mod:`advaudit.compare.where.sensitivity_recipes`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from advaudit.compare.where.cells import Cells, cell_fields, said
from advaudit.compare.where.words import sensitivity_words
from advaudit.core.statistics import ALPHA, holm, paired_mean_test, signed_rank_test


def interaction(a: str, b: str, cells: Sequence[Cells], accuracy: Sequence[dict[str, np.ndarray]],
                overall: dict[str, np.ndarray], alpha: float = ALPHA, min_points: float = 0.0,
                every_interval: bool = True) -> list[dict[str, Any]]:
    """The pair's rows over every cell: accuracies, the difference in the cell, the interaction with its
    interval and Wilcoxon p, Holm-corrected over the rows; ``words`` where it is said. ``accuracy``: per cells
    ``{checkpoint: [n, k]}``; ``overall``: ``{checkpoint: [n]}``. ``every_interval=False`` bootstraps the two
    intervals only of rows whose corrected p is below ``alpha`` (the only ones that can be said); the others get
    NaN bounds: a recipe's pairs of files need no more (:mod:`advaudit.compare.where.sensitivity_recipes`)."""
    rows = []
    for c, by_target in zip(cells, accuracy):
        acc_a, acc_b = by_target[a], by_target[b]
        for k in range(len(c.bounds)):
            loss = (acc_a[:, k] - overall[a], acc_b[:, k] - overall[b])
            rows.append({"a": a, "b": b, **cell_fields(c, k), "acc_a": float(np.nanmean(acc_a[:, k])),
                         "acc_b": float(np.nanmean(acc_b[:, k])), "overall_a": float(overall[a].mean()),
                         "overall_b": float(overall[b].mean()), "p": signed_rank_test(loss[0] - loss[1])[1],
                         "_paired": (loss, (acc_a[:, k], acc_b[:, k]))})
    holm(rows)
    for row in rows:
        loss, inside = row.pop("_paired")
        interval = every_interval or row["p_holm"] < alpha
        row.update(paired_mean_test(*loss, interval=interval), in_fifth=paired_mean_test(*inside, interval=interval))
        row["said"] = said(row, alpha, min_points)
        row["words"] = sensitivity_words(row, len(rows)) if row["said"] else ""
    return rows
