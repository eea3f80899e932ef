"""The confirmation: both checkpoints on held-out instances under new random conditions in a region.

A region proposed from the worst cases (:mod:`advaudit.compare.where`) was chosen on the examined
instances and the examiners' conditions; it is checked on others. Instances come from the split
the examination did not use (``test`` when it examined ``val``, else ``val``), drawn with the seed;
each gets ``m`` random conditions, uniform over the world's factors except the region's factor,
which is uniform inside the region (an arc across the seam on a circle). Every condition is
rendered once and scored by both checkpoints (the same images), so each instance gives a pair:

- the mean true-class probability over its ``m`` conditions for each checkpoint (the primary
  number: the demo's check, random search's E_T), and its accuracy over them;
- the paired difference over instances with a 95% bootstrap interval and the Wilcoxon
  signed-rank p-value; the checkpoint with the lower mean is **weaker there** when the p-value,
  Holm-corrected over the group's confirmations, is below ``alpha``; otherwise nothing separates them.

New instances and new conditions: the choice of region needs no correction. What was rendered is
recorded (split, instance ids, seed, conditions per instance, how they were drawn), and
:func:`region_conditions` redraws the same conditions from that record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from scipy.stats import wilcoxon
from statsmodels.stats.multitest import multipletests
from torch import Tensor

from advaudit.compare.where import ALPHA, Axis, region_words
from advaudit.core.intervals import format_interval, mean_with_ci
from advaudit.worlds.protocol import unit_to_factor

DRAW = ("torch.Generator().manual_seed(seed): torch.rand([n, m, C]) mapped onto the factors' bounds; "
        "the region's factor then torch.rand([n, m]) mapped onto the region (an arc may cross the seam)")


@dataclass(frozen=True)
class Settings:
    """How much the checks render. ``instances``: held-out instances (at most, per group);
    ``region_conditions``: random conditions per instance in a region; ``random_conditions``: per
    instance over all of S for the per-factor sensitivity; ``batch``: images per forward pass;
    ``min_points``: the smallest checkpoint x fifth difference (accuracy points) the sensitivity
    says, see :func:`advaudit.compare.sensitivity.said`."""

    instances: int = 60
    region_conditions: int = 32
    random_conditions: int = 100
    alpha: float = ALPHA
    min_points: float = 3.0
    batch: int = 512


def held_out_split(examined: str) -> str:
    """The split the examination did not use: ``test`` unless it examined ``test``, then ``val``."""
    return "val" if str(examined) == "test" else "test"


def choose_instances(world: Any, split: str, n: int, seed: int, skip: int = 0) -> Any:
    """Up to ``n`` instances of ``split`` drawn with ``seed`` (sorted by position in the split); ``skip``
    passes over the first ``skip`` of the same draw, so ``skip=n`` gives instances disjoint from ``skip=0``'s."""
    pool = world.instances(split)
    order = torch.randperm(len(pool), generator=torch.Generator().manual_seed(int(seed)))[skip:skip + n]
    return pool.subset(order.sort().values)


def uniform_conditions(factors: Sequence[Any], n: int, m: int, seed: int) -> Tensor:
    """``[n, m, C]`` conditions uniform over ``factors``' bounds, drawn with ``seed``."""
    return _uniform(factors, n, m, torch.Generator().manual_seed(int(seed)))


def _uniform(factors: Sequence[Any], n: int, m: int, generator: torch.Generator) -> Tensor:
    return unit_to_factor(torch.rand(n, m, len(factors), generator=generator), factors)


def region_conditions(factors: Sequence[Any], n: int, m: int, factor: str, region: Sequence[float],
                      seed: int) -> Tensor:
    """``[n, m, C]``: uniform over S with ``factor`` uniform in ``region`` (module docstring, :data:`DRAW`)."""
    generator = torch.Generator().manual_seed(int(seed))
    s = _uniform(factors, n, m, generator)
    index = [f.name for f in factors].index(factor)
    axis = Axis.of(factors[index])
    low, high = float(region[0]), float(region[1])
    length = (high - low) % (axis.high - axis.low) if axis.periodic and low > high else high - low
    values = low + torch.rand(n, m, generator=generator) * length
    if axis.periodic:
        values = axis.low + torch.remainder(values - axis.low, axis.high - axis.low)
    s[:, :, index] = values.clamp(axis.low, axis.high)
    return s


def score(world: Any, z: Any, s: Tensor, targets: dict[str, Any], calibrated: bool = False,
          batch: int = 512) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Render ``z`` under ``s`` ``[N, m, C]`` once; per target ``(true_prob [N, m], correct [N, m])``."""
    n, m, _ = s.shape
    per_chunk = max(1, batch // max(m, 1))
    out: dict[str, list[tuple[Tensor, Tensor]]] = {name: [] for name in targets}
    for start in range(0, n, per_chunk):
        index = torch.arange(start, min(start + per_chunk, n))
        part = z.subset(index)
        images = world.render(part, s[index]).cpu()
        labels = part.labels.cpu().repeat_interleave(m)
        for name, target in targets.items():
            with torch.no_grad():
                probs = target.predict_proba(images, calibrated=calibrated).cpu().float()
            true_prob = probs.gather(1, labels.view(-1, 1)).squeeze(1)
            out[name].append((true_prob.view(-1, m), (probs.argmax(1) == labels).view(-1, m)))
    return {name: (torch.cat([p for p, _ in parts]).numpy().astype(float),
                   torch.cat([c for _, c in parts]).numpy().astype(float)) for name, parts in out.items()}


def paired(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Mean of ``a - b`` over paired units ``[n]`` with a 95% bootstrap interval and Wilcoxon's p."""
    diffs = np.asarray(a, float) - np.asarray(b, float)
    diffs = diffs[np.isfinite(diffs)]
    stats = mean_with_ci(diffs)
    if len(diffs) == 0:
        p = float("nan")
    elif np.all(diffs == 0):
        p = 1.0
    else:
        p = float(wilcoxon(diffs, zero_method="wilcox").pvalue)
    return {"diff": stats["mean"], "lo": stats["lo"], "hi": stats["hi"], "p": p, "n": int(len(diffs))}


def confirm(world: Any, z: Any, targets: dict[str, Any], pair: tuple[str, str], factor: str,
            region: Sequence[float], seed: int, settings: Settings, calibrated: bool = False) -> dict[str, Any]:
    """The check of ``region`` on ``factor`` for checkpoints ``pair`` (names in ``targets``) on
    instances ``z``; ``p_holm`` and the verdict are set by :func:`decide` once all checks ran."""
    factors = list(world.factors)
    s = region_conditions(factors, len(z), settings.region_conditions, factor, region, seed)
    scores = score(world, z, s, {n: targets[n] for n in pair}, calibrated, settings.batch)
    (prob_a, correct_a), (prob_b, correct_b) = (scores[n] for n in pair)
    unit = next((str(getattr(f, "unit", "") or "") for f in factors if f.name == factor), "")
    return {"a": pair[0], "b": pair[1], "factor": factor, "unit": unit, "region": [float(r) for r in region],
            "split": None, "instances": [int(i) for i in z.ids.tolist()], "seed": int(seed),
            "conditions_per_instance": int(settings.region_conditions), "draw": DRAW,
            "true_prob": {pair[0]: float(prob_a.mean()), pair[1]: float(prob_b.mean())},
            "accuracy": {pair[0]: float(correct_a.mean()), pair[1]: float(correct_b.mean())},
            **paired(prob_a.mean(1), prob_b.mean(1)),
            "accuracy_diff": paired(correct_a.mean(1), correct_b.mean(1))}


def holm_rows(rows: list[dict[str, Any]]) -> None:
    """Set ``p_holm`` on every row (in place): Holm over the rows with a finite ``p``, NaN on the others."""
    finite = [r for r in rows if math.isfinite(r["p"])]
    if finite:
        for row, p in zip(finite, multipletests([r["p"] for r in finite], method="holm")[1]):
            row["p_holm"] = float(p)
    for row in rows:
        row.setdefault("p_holm", float("nan"))


def decide(checks: list[dict[str, Any]], alpha: float = ALPHA) -> None:
    """Holm over ``checks`` (in place); each gets ``p_holm``, ``weaker`` (or None) and ``words``."""
    holm_rows(checks)
    for check in checks:
        separated = math.isfinite(check["p_holm"]) and check["p_holm"] < alpha and check["diff"] != 0
        check["weaker"] = (check["a"] if check["diff"] < 0 else check["b"]) if separated else None
        check["words"] = confirmation_words(check)


def confirmation_words(check: dict[str, Any]) -> str:
    """The sentence the report says about one check."""
    where = region_words(check["factor"], check["region"], check.get("unit", ""))
    return f"Checked on held-out instances under new random conditions with {where}: {verdict_words(check)}."


def verdict_words(check: dict[str, Any]) -> str:
    """What one check found, with its numbers (no region, no final stop): ``A is the weaker checkpoint
    there (...)`` or ``nothing separates A and B there (...)``."""
    a, b, weaker = check["a"], check["b"], check.get("weaker")
    lower, other = (a, b) if check["diff"] <= 0 else (b, a)
    sign = 1.0 if lower == a else -1.0
    lo, hi = sorted((sign * check["lo"], sign * check["hi"]))
    acc = check["accuracy_diff"]
    acc_lo, acc_hi = sorted((sign * acc["lo"], sign * acc["hi"]))
    numbers = (f"mean true-class probability {lower} {check['true_prob'][lower]:.3f} vs {other} "
               f"{check['true_prob'][other]:.3f}, paired difference "
               f"{format_interval(sign * check['diff'], lo, hi, 3, sign=True)} over {check['n']} held-out instances "
               f"x {check['conditions_per_instance']} conditions, Wilcoxon p = {_p(check['p'])} "
               f"(Holm {_p(check['p_holm'])}); "
               f"accuracy {check['accuracy'][lower]:.2f} vs {check['accuracy'][other]:.2f}, "
               f"{format_interval(100 * sign * acc['diff'], 100 * acc_lo, 100 * acc_hi, 0, sign=True)} points")
    if weaker is None:
        return f"nothing separates {a} and {b} there ({numbers})"
    return f"{weaker} is the weaker checkpoint there ({numbers})"


def _p(p: float) -> str:
    return "nan" if not math.isfinite(p) else (f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}")
