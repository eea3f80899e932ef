"""Per-factor sensitivity on paired random conditions: each checkpoint's accuracy per fifth of each factor.

Held-out instances ``[n]`` each get ``m`` conditions uniform over all of S, rendered once and scored
by every checkpoint (the same images). For every factor with a range, its range is cut in fifths
(from ``low``; on a circle too); a condition falls in the fifth its value of that factor lies in,
so one set of renders serves every factor. Per instance ``i``, checkpoint ``A`` and fifth ``f``:

    acc_A,i(f) = share of i's conditions in f that A classifies correctly
    acc_A,i    = share of all of i's conditions that A classifies correctly

The same is done per **band** of distance from a factor's reference value where it has one (near, middle,
far: :mod:`advaudit.compare.where.cells`; the far band holds both ends of a range, so a loss at both ends is one
finding): every formula below holds with "fifth" read as "cell", and Holm runs over all cells of the pair.

Per checkpoint and fifth: the mean of ``acc_A,i(f)`` over instances with a 95% bootstrap interval.
Per pair (A, B) and fifth, the **checkpoint x fifth difference** (the interaction)

    d_i(f) = (acc_A,i(f) - acc_A,i) - (acc_B,i(f) - acc_B,i)

is how many points more A loses in that fifth than B does, each measured from its own accuracy
over all random conditions: a checkpoint that is worse everywhere by the same amount shows no
interaction. Its mean over instances gets a 95% bootstrap interval and a Wilcoxon signed-rank
p-value, Holm-corrected over factors x fifths of the pair. The report says "At <factor> <fifth> A is
the less accurate (...); measured from each one's accuracy over all random conditions, A does X points
worse there than B" only where the corrected p is below ``alpha``, the interval lies
beyond ``min_points`` (3 accuracy points by default: two checkpoints of one recipe trained with
different seeds differ by 1-3 points in some fifth of some factor at 300 held-out instances, a
difference that is real for those two files but says nothing about the recipe; see the comparing
results page), and only where the plain difference in the fifth (``acc_A(f) - acc_B(f)``, reported beside
it) has an interval on the same side of 0: a checkpoint that is simply better than its own average
in a fifth (because it loses elsewhere) is never said to make the other "lose more" there.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from advaudit.compare.where.cells import Cells, cell_fields, cells_of, per_cell
from advaudit.compare.where.confirm import Settings, score, uniform_conditions
from advaudit.compare.where.interaction import interaction
from advaudit.compare.where.sensitivity_recipes import recipe_interaction
from advaudit.core.intervals import mean_with_ci

FIFTHS = 5


def fifth_index(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``[...]`` factor values -> ``[...]`` fifth 0..4 of ``[low, high]`` (``high`` in the last)."""
    unit = (np.asarray(values, float) - low) / (high - low)
    return np.clip(np.floor(unit * FIFTHS), 0, FIFTHS - 1).astype(int)


def per_fifth(correct: np.ndarray, fifth: np.ndarray) -> np.ndarray:
    """``correct`` ``[n, m]`` and ``fifth`` ``[n, m]`` -> per-instance accuracy ``[n, 5]`` (NaN where an
    instance has no condition in a fifth; :func:`advaudit.compare.where.cells.per_cell`)."""
    return per_cell(correct, fifth, FIFTHS)


def measure(world: Any, z: Any, targets: dict[str, Any], sides: dict[str, tuple[str, ...]], seed: int,
            settings: Settings, calibrated: bool = False,
            pairs: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Render ``z`` under ``settings.random_conditions`` uniform conditions each and score every file of ``targets``
    (``{unit: loaded target}``; ``sides``: ``{checkpoint name: its units}``); returns the record (module
    docstring): ``factors``, ``checkpoints`` rows and ``overall`` per checkpoint (a recipe's files pooled), and
    ``pairs`` rows for ``pairs`` (names; default every pair): two recipes over their files
    (:mod:`advaudit.compare.where.sensitivity_recipes`), else over instances."""
    factors = [f for f in world.factors if f.high > f.low]
    s = uniform_conditions(list(world.factors), len(z), settings.random_conditions, seed)
    scores = score(world, z, s, targets, calibrated, settings.batch)
    by_unit = {unit: c for unit, (_, c) in scores.items()}
    correct = {name: np.mean([by_unit[u] for u in units], axis=0) for name, units in sides.items()}
    overall = {name: c.mean(1) for name, c in correct.items()}                    # [n] per checkpoint
    cells, accuracy = cell_accuracies(world, s, correct)
    rows = [{"target": name, **cell_fields(c, k), **mean_with_ci(accuracy[i][name][:, k])}
            for i, c in enumerate(cells) for name in sides for k in range(len(c.bounds))]
    tested = []
    unit_accuracy = cell_accuracies(world, s, by_unit)[1] if any(len(u) > 1 for u in sides.values()) else None
    for a, b in pairs if pairs is not None else itertools.combinations(list(sides), 2):
        if unit_accuracy is not None and min(len(sides[a]), len(sides[b])) >= 2:
            tested.append(recipe_interaction(a, b, sides, cells, unit_accuracy, {u: c.mean(1) for u, c in by_unit.items()},
                                             settings.alpha, settings.min_points))
        else:
            tested.append(interaction(a, b, cells, accuracy, overall, settings.alpha, settings.min_points))
    return {"instances": [int(i) for i in z.ids.tolist()], "seed": int(seed),
            "conditions_per_instance": int(settings.random_conditions),
            "draw": "torch.Generator().manual_seed(seed): torch.rand([n, m, C]) mapped onto the factors' bounds",
            "factors": [{"name": f.name, "low": float(f.low), "high": float(f.high),
                         "unit": str(getattr(f, "unit", "") or ""), "periodic": bool(getattr(f, "periodic", False))}
                        for f in factors],
            "overall": {name: mean_with_ci(v) for name, v in overall.items()},
            "checkpoints": rows, "pairs": [row for rows_ in tested for row in rows_]}


def cell_accuracies(world: Any, s: Any, correct: dict[str, np.ndarray]) -> tuple[list[Cells], list[dict[str, np.ndarray]]]:
    """The world's cells (:func:`advaudit.compare.where.cells.cells_of`) and, per cells, ``{target: [n, k]}`` each
    instance's accuracy in each cell under the conditions ``s`` ``[n, m, C]``."""
    column = {f.name: i for i, f in enumerate(world.factors)}
    cells = cells_of(world)
    accuracy = []
    for c in cells:
        index = c.index(s[:, :, column[c.name]].numpy())
        accuracy.append({name: per_cell(values, index, len(c.bounds)) for name, values in correct.items()})
    return cells, accuracy
