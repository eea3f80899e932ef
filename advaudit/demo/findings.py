"""What the demo found, computed from the files its runs wrote (never from expectations).

Inputs: the training jobs' ``result.json`` (test accuracy, the factor bounds each was trained on)
and two comparisons of :mod:`advaudit.compare` (``comparison.json``):

- **Severity** (step 2): for each examiner, the paired test of its headline metric (``audit.metric``
  of its runs; a true-class probability, so lower = weaker) between the two checkpoints.
- **Where** (step 2): per examiner and searched factor, the comparison's between-checkpoint test of
  the two checkpoints' worst conditions (:mod:`advaudit.compare.where`: two-sample Kolmogorov-Smirnov
  on an interval, Kuiper on a circle), Holm-corrected over all examiner x factor tests; the factor
  with the smallest p. Its window a fifth of the range wide (slid in tenths, across the seam on a
  circle) where one checkpoint's worst cases outnumber the other's most is the *suspected region* and
  that checkpoint the *suspect*. This only chooses where to look; it decides nothing.
- **Check** (step 3): random conditions with that factor inside the suspected region, on held-out
  test instances (step 2 examined validation instances), the same for both checkpoints; the
  comparison's paired test of mean true-class probability names the weaker checkpoint there
  (p < 0.05), or names none. New instances and conditions: the choice of region needs no correction.
- **Planted**: the checkpoint whose training narrowed one factor, and the part of the range it
  never saw; ``found_planted`` says whether the check named that checkpoint in that factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.compare.where import Axis, between_checkpoints, holm
from advaudit.core.records import read_json
from advaudit.errors import require
from advaudit.worlds import build_world

ALPHA = 0.05


@dataclass
class Trained:
    """One training job: its checkpoint, test accuracy and the factors it was trained on narrowed."""

    name: str                                   # run folder: control, roll_narrowed
    checkpoint: str
    test_acc: float
    narrowed: dict[str, tuple[float, float]]    # training bounds that differ from the world's


@dataclass
class Verdict:
    """One group's paired test of its headline metric (a true-class probability) between two checkpoints."""

    examiner: str
    metric: str
    words: str
    means: dict[str, float]                     # checkpoint name -> mean
    lower: str                                  # the checkpoint with the lower mean difference
    diff: float                                 # lower - other (<= 0)
    lo: float
    hi: float
    test: str
    p_holm: float
    n_instances: int

    @property
    def significant(self) -> bool:
        return math.isfinite(self.p_holm) and self.p_holm < ALPHA and self.diff != 0

    @property
    def weaker(self) -> str | None:
        return self.lower if self.significant else None


@dataclass
class Where:
    """The factor where the two checkpoints' worst cases lie differently, and the suspected region."""

    examiner: str
    factor: str
    p: float                                    # two-sample test, Holm-corrected
    suspect: str                                # the checkpoint with more worst cases in the region
    region: tuple[float, float]
    share_suspect: float
    share_other: float
    test: str = "KS"                            # KS on an interval, Kuiper on a circle


@dataclass
class Findings:
    trained: list[Trained]
    severity: list[Verdict]
    where: Where | None = None
    check: Verdict | None = None
    planted: dict[str, Any] = field(default_factory=dict)   # {checkpoint, factor, trained, unseen}

    @property
    def weaker(self) -> str | None:
        """The checkpoint the check on fresh conditions found weaker in the suspected region."""
        return self.check.weaker if self.check is not None else None

    @property
    def found_planted(self) -> bool:
        """The check named the planted checkpoint, in the planted factor, in a region overlapping the unseen range."""
        if not (self.weaker and self.where and self.planted and self.planted.get("unseen")):
            return False
        lo, hi = self.planted["unseen"]
        overlaps = self.where.region[0] < hi and lo < self.where.region[1]
        return self.weaker == self.planted["checkpoint"] and self.where.factor == self.planted["factor"] and overlaps


def checkpoint_name(path: str) -> str:
    """``.../train/control/checkpoints/target.pt`` -> ``control``."""
    return Path(path).parent.parent.name


def read_trained(train_dir: Path, world: dict[str, tuple[float, float]]) -> list[Trained]:
    """The successful training jobs under ``train_dir`` (one folder per checkpoint)."""
    out = []
    for path in sorted(train_dir.glob("*/result.json")):
        result = read_json(path)
        if result.get("status") != "ok":
            continue
        bounds = ((result.get("config") or {}).get("dataset") or {}).get("factors") or {}
        narrowed = {k: (float(v[0]), float(v[1])) for k, v in bounds.items()
                    if isinstance(v, (list, tuple)) and k in world and (float(v[0]), float(v[1])) != world[k]}
        out.append(Trained(path.parent.name, str(result["checkpoint"]), float(result["test/acc"]), narrowed))
    return out


def headline_metrics(examine_dir: Path) -> dict[str, str]:
    """Examiner name -> the ``audit.metric`` its runs were configured with."""
    out = {}
    for path in examine_dir.glob("*/result.json"):
        config = read_json(path).get("config") or {}
        examiner, metric = (config.get("examiner") or {}).get("name"), (config.get("audit") or {}).get("metric")
        if examiner and metric:
            out[str(examiner)] = str(metric)
    return out


def verdicts(comparison: dict[str, Any], metrics: dict[str, str]) -> list[Verdict]:
    """Per worst-case group (examiner) of ``comparison``: the paired test of its headline metric."""
    out = []
    for group in comparison["groups"]:
        method = group.get("method")
        if group.get("audit") != "worst_case" or method not in metrics:
            continue
        row = next((r for r in group["pairs"] if r["metric"] == metrics[method]), None)
        if row is None:
            continue
        a, b = checkpoint_name(row["a"]), checkpoint_name(row["b"])
        means = {checkpoint_name(c["target"]): float(c["mean"]) for c in group["checkpoints"] if c["metric"] == row["metric"]}
        lower, sign = (a, 1.0) if row["diff"] <= 0 else (b, -1.0)   # row: a - b
        lo, hi = sorted((sign * row["lo"], sign * row["hi"]))
        words = {"examine/E_T": "E_T", "examine/worst": "worst case"}.get(row["metric"], row["metric"])
        if method == "random" and row["metric"] == "examine/E_T":   # random search's E_T: a plain average
            words = "mean true-class probability"
        out.append(Verdict(str(method), row["metric"], words, means, lower, sign * row["diff"], lo, hi, row["test"],
                           float(row.get("p_holm", float("nan"))), int(row["n_instances"])))
    return out


def _worst_values(comparison: dict[str, Any]) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """``{(examiner, factor): {checkpoint: worst-case values}}`` from the per-factor breakdowns."""
    out: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    for group in comparison["groups"]:
        if group.get("audit") != "worst_case":
            continue
        for row in group.get("per_factor") or []:
            key = (str(group.get("method")), row["factor"])
            out.setdefault(key, {})[checkpoint_name(row["target"])] = np.asarray(row["values"], float)
    return out


def where(comparison: dict[str, Any], world: dict[str, tuple[float, float]],
          circles: frozenset[str] | set[str] = frozenset()) -> Where | None:
    """The factor whose worst conditions differ most between the two checkpoints (module docstring);
    ``circles``: the periodic factors of ``world``. A region across a circle's seam is returned as
    ``(low, high + period)`` (``324-396``), the form ``world.factors`` accepts for such an arc."""
    tests = []
    for examiner, by_factor in _by_examiner(comparison).items():
        names = tuple(dict.fromkeys(n for values in by_factor.values() for n in values))
        if len(names) != 2:
            continue
        axes = [Axis(f, *world[f], periodic=f in circles) for f in by_factor if f in world]
        tests += [(examiner, t) for t in between_checkpoints(by_factor, axes, names)]  # type: ignore[arg-type]
    if not tests:
        return None
    holm([t for _, t in tests])
    examiner, best = min(tests, key=lambda pair: pair[1].p_holm)
    low, high = best.region
    if low > high:
        high += world[best.factor][1] - world[best.factor][0]
    return Where(examiner, best.factor, best.p_holm, best.suspect, (low, high), best.share_suspect,
                 best.share_other, best.test.split(" ")[0])


def _by_examiner(comparison: dict[str, Any]) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """``{examiner: {factor: {checkpoint: worst-case values}}}`` from the per-factor breakdowns."""
    out: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for (examiner, factor), values in _worst_values(comparison).items():
        if len(values) == 2 and all(len(v) for v in values.values()):
            out.setdefault(examiner, {})[factor] = values
    return out


def unseen_region(trained: tuple[float, float], full: tuple[float, float]) -> tuple[float, float] | None:
    """The part of ``full`` a training range left out, when it is one interval at either end."""
    if trained[0] > full[0] and trained[1] >= full[1]:
        return (full[0], trained[0])
    if trained[1] < full[1] and trained[0] <= full[0]:
        return (trained[1], full[1])
    return None


def world_factors(examine_dir: Path) -> dict[str, tuple[float, float]]:
    """Factor name -> (low, high) of the examinations' world (rebuilt from a run's config)."""
    return {f.name: (float(f.low), float(f.high)) for f in _world_of(examine_dir)}


def world_circles(examine_dir: Path) -> set[str]:
    """The periodic factors (circles) of the examinations' world."""
    return {f.name for f in _world_of(examine_dir) if f.periodic}


def _world_of(examine_dir: Path) -> list[Any]:
    for path in sorted(examine_dir.glob("*/result.json")):
        config = read_json(path).get("config") or {}
        if config.get("world"):
            return list(build_world(config["world"]).factors)
    return []


def read_comparison(sweep_dir: Path) -> dict[str, Any]:
    path = sweep_dir / "comparison" / "comparison.json"
    require(path.exists(), f"{path} is missing: the sweep in {sweep_dir} wrote no comparison (see its log)")
    return read_json(path)


def analyse_examination(train_dir: Path, examine_dir: Path) -> Findings:
    """Steps 1-2: accuracy, severity, where the worst cases lie, and what was planted."""
    world = world_factors(examine_dir)
    comparison = read_comparison(examine_dir)
    trained = read_trained(train_dir, world)
    findings = Findings(trained, verdicts(comparison, headline_metrics(examine_dir)),
                        where(comparison, world, world_circles(examine_dir)))
    planted = [t for t in trained if t.narrowed]
    if len(planted) == 1 and len(planted[0].narrowed) == 1:
        factor, bounds = next(iter(planted[0].narrowed.items()))
        findings.planted = {"checkpoint": planted[0].name, "factor": factor, "trained": bounds,
                            "unseen": unseen_region(bounds, world[factor])}
    return findings


def add_check(findings: Findings, check_dir: Path) -> Findings:
    """Step 3: the paired test on fresh conditions in the suspected region."""
    found = verdicts(read_comparison(check_dir), headline_metrics(check_dir))
    findings.check = found[0] if found else None
    return findings
