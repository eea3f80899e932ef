"""Rendering the interventions once and scoring every checkpoint file on the same images."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from torch import Tensor

from advaudit.compare.where.confirm import score
from advaudit.compare.why.plan import Intervention
from advaudit.core.progress import progress
from advaudit.worlds.references import references_of, with_references

#: the key of the conditions as drawn (no intervention)
AS_DRAWN = "as drawn"


@dataclass
class Measured:
    """What one set of renders gave: ``correct[key][unit]`` and ``true_prob[key][unit]``, each ``[n, m]``, for the
    conditions as drawn (:data:`AS_DRAWN`) and each intervention's name; ``renders`` counts the images rendered
    (each scored by every unit) and ``seconds`` the time taken."""

    correct: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    true_prob: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    renders: int = 0
    seconds: float = 0.0

    def accuracy(self, key: str, unit: str) -> float:
        """The unit's accuracy over every render of ``key``."""
        return float(self.correct[key][unit].mean())


def measure(world: Any, z: Any, s: Tensor, plan: Sequence[Intervention], units: dict[str, Any],
            calibrated: bool = False, batch: int = 512, into: Measured | None = None) -> Measured:
    """Render ``z`` under ``s`` ``[n, m, C]`` as drawn and under each intervention of ``plan`` (the same conditions
    with its factors at their reference), score every unit of ``units`` (``{unit: loaded target}``) on the same
    images. With ``into`` (an earlier measurement of the same ``z`` and ``s``), only the interventions it lacks are
    rendered and added to it."""
    started = time.perf_counter()
    references = references_of(world)
    out = into if into is not None else Measured()
    keys = [(AS_DRAWN, s)] * (into is None)
    keys += [(k.name, with_references(s, list(world.factors), k.factors, references)) for k in plan
             if k.name not in out.correct]
    bar = progress(total=len(keys) * s.shape[0] * s.shape[1], desc="why: rendering interventions", unit="render")
    for key, conditions in keys:
        scores = score(world, z, conditions, units, calibrated, batch)
        out.true_prob[key] = {unit: prob for unit, (prob, _) in scores.items()}
        out.correct[key] = {unit: correct for unit, (_, correct) in scores.items()}
        out.renders += int(conditions.shape[0] * conditions.shape[1])
        bar.update(int(conditions.shape[0] * conditions.shape[1]))
    bar.close()
    out.seconds += time.perf_counter() - started
    return out
