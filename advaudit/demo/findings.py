"""What the demo found, read from the files its runs wrote (never from expectations).

Inputs: each checkpoint's training record (``result.json`` of a training job, or ``trained.json`` of a
shipped checkpoint: test accuracy and the factor bounds it was trained on) and the comparison
:mod:`advaudit.compare` wrote at the end of the examination multirun (``comparison.json``). The demo
computes no statistics of its own; per worst-case group (examiner) it reads:

- **the answer**: the primary verdict (``answers``: the audit's declared metric, E_T for RL and BO)
  with the secondary metrics' relation to it (supports, conflicts, floor, ...);
- **why**: the comparison's why section (:mod:`advaudit.compare.why`): the headline of each pair, the factor
  or group of factors whose reference value closes the gap;
- **where**: the comparison's where section (:mod:`advaudit.compare.where.section`): the region a
  between-checkpoint test on the worst cases proposed and its **confirmation** on held-out instances
  under new random conditions there, and the **per-fifth sensitivity** (accuracy per fifth of each
  factor on paired random conditions, the checkpoint x fifth difference said where it survives Holm);
- **planted**: the checkpoint whose training narrowed one factor and the part of the range it never
  saw; ``found_planted`` says whether the comparison named that checkpoint weaker on the primary
  question and located it in that factor, overlapping that range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advaudit.core.records import read_json
from advaudit.errors import require
from advaudit.worlds import build_world


@dataclass
class Trained:
    """One checkpoint: its name, file, test accuracy and the factors it was trained on narrowed."""

    name: str                                   # run folder: control, roll_narrowed
    checkpoint: str
    test_acc: float
    narrowed: dict[str, tuple[float, float]]    # training bounds that differ from the world's


@dataclass
class Answer:
    """One examiner group's primary verdict, as the comparison said it."""

    examiner: str
    metric: str
    status: str                                 # weaker, none, floor, ceiling, identical, differ
    weaker: str | None
    text: str
    conflicts: list[str] = field(default_factory=list)   # secondary metrics naming the other checkpoint


@dataclass
class Located:
    """A place where the comparison's where section names one checkpoint weaker."""

    how: str                                    # "confirmed" (a proposed region checked) or "per fifth"
    examiner: str
    weaker: str
    factor: str
    region: tuple[float, float]
    words: str


@dataclass
class Findings:
    trained: list[Trained]
    answers: list[Answer]
    located: list[Located] = field(default_factory=list)
    where_words: list[str] = field(default_factory=list)   # the where sections' sentences, each said once
    planted: dict[str, Any] = field(default_factory=dict)  # {checkpoint, factor, trained, unseen, period}
    why_words: list[str] = field(default_factory=list)     # the why sections' headlines, each said once

    @property
    def weaker(self) -> str | None:
        """The checkpoint the primary verdicts name weaker, when they name one and only one."""
        named = {a.weaker for a in self.answers if a.status == "weaker"}
        return named.pop() if len(named) == 1 else None

    @property
    def found_planted(self) -> bool:
        """The primary verdict names the planted checkpoint, and the where section locates it in the planted
        factor in a region overlapping the range it never saw."""
        if not (self.weaker and self.planted and self.planted.get("unseen")) or self.weaker != self.planted["checkpoint"]:
            return False
        return any(p.weaker == self.weaker and p.factor == self.planted["factor"]
                   and overlaps(p.region, self.planted["unseen"], self.planted.get("period")) for p in self.located)


def overlaps(region: tuple[float, float], unseen: tuple[float, float], period: tuple[float, float] | None) -> bool:
    """``region`` and ``unseen`` share a stretch; on a circle (``period`` = its bounds) a region with
    low > high, or one past the upper bound, wraps across the seam."""
    low, high = float(region[0]), float(region[1])
    pieces = [(low, high)]
    if period is not None:
        start, end = period
        width = end - start
        if low > high:
            pieces = [(low, end), (start, high)]
        elif high > end:
            pieces = [(low, end), (start, high - width)]
    return any(a < unseen[1] and unseen[0] < b for a, b in pieces)


def checkpoint_name(path: str) -> str:
    """``.../train/control/checkpoints/target.pt`` or the report's ``control/target`` -> ``control``."""
    parts = Path(str(path)).parts
    if "checkpoints" in parts and parts.index("checkpoints") > 0:
        return parts[parts.index("checkpoints") - 1]
    return str(path)[: -len("/target")] if str(path).endswith("/target") else str(path)


def read_trained(train_dir: Path, world: dict[str, tuple[float, float]]) -> list[Trained]:
    """The checkpoints under ``train_dir`` (one folder each): a training job's ``result.json``, or a
    shipped checkpoint's ``trained.json`` (:mod:`advaudit.demo.shipped`)."""
    out = []
    for folder in sorted(p for p in train_dir.glob("*") if p.is_dir()):
        if (folder / "result.json").exists():
            result = read_json(folder / "result.json")
            if result.get("status") != "ok":
                continue
            acc, checkpoint = float(result["test/acc"]), str(result["checkpoint"])
            bounds = ((result.get("config") or {}).get("dataset") or {}).get("factors") or {}
        elif (folder / "trained.json").exists():
            record = read_json(folder / "trained.json")
            acc, checkpoint = float(record["test_acc"]), str(folder / "checkpoints" / "target.pt")
            bounds = record.get("factors") or {}
        else:
            continue
        narrowed = {k: (float(v[0]), float(v[1])) for k, v in bounds.items()
                    if isinstance(v, (list, tuple)) and k in world and (float(v[0]), float(v[1])) != world[k]}
        out.append(Trained(folder.name, checkpoint, acc, narrowed))
    return out


def read_answers(comparison: dict[str, Any]) -> list[Answer]:
    """Per worst-case group: the first pair's primary verdict (the demo compares two checkpoints)."""
    out = []
    for group in comparison["groups"]:
        if group.get("audit") != "worst_case" or not group.get("answers"):
            continue
        answer = group["answers"][0]
        names = group.get("targets") or {}
        weaker = answer.get("weaker")
        out.append(Answer(str(group.get("method")), str(answer["metric"]), str(answer["status"]),
                          checkpoint_name(names.get(weaker, weaker)) if weaker else None, str(answer["text"]),
                          [s["text"] for s in answer.get("secondary", []) if s.get("relation") == "conflicts"]))
    return out


def read_where(comparison: dict[str, Any]) -> tuple[list[Located], list[str]]:
    """The where sections' confirmed regions and said per-fifth rows, and their sentences (each once)."""
    located: list[Located] = []
    words: list[str] = []
    for group in comparison["groups"]:
        section = group.get("where")
        if group.get("audit") != "worst_case" or not section:
            continue
        method = str(group.get("method"))
        for pair in section.get("pairs", []):
            check = pair.get("confirmation")
            if check and check.get("weaker"):
                located.append(Located("confirmed", method, checkpoint_name(check["weaker"]), str(check["factor"]),
                                       (float(check["region"][0]), float(check["region"][1])), str(check["words"])))
        for row in (section.get("sensitivity") or {}).get("pairs", []):
            if row.get("said") and row.get("kind", "fifth") == "fifth":   # a band's bounds are distances, not values
                weaker = row["a"] if row["diff"] < 0 else row["b"]
                located.append(Located("per fifth", method, checkpoint_name(weaker), str(row["factor"]),
                                       (float(row["low"]), float(row["high"])), str(row["words"])))
        words += [s for s in section.get("sentences", []) if s not in words]
    return located, words


def read_why(comparison: dict[str, Any]) -> list[str]:
    """The why sections' headline per pair (the cause of the gap, or that none is said), each once."""
    words: list[str] = []
    for group in comparison["groups"]:
        for pair in (group.get("why") or {}).get("pairs", []):
            if pair.get("headline_words") and pair["headline_words"] not in words:
                words.append(pair["headline_words"])
    return words


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


def unseen_region(trained: tuple[float, float], full: tuple[float, float]) -> tuple[float, float] | None:
    """The part of ``full`` a training range left out, when it is one interval at either end."""
    if trained[0] > full[0] and trained[1] >= full[1]:
        return (full[0], trained[0])
    if trained[1] < full[1] and trained[0] <= full[0]:
        return (trained[1], full[1])
    return None


def analyse_examination(train_dir: Path, examine_dir: Path) -> Findings:
    """Accuracy, the primary verdicts, where the comparison located a weakness, and what was planted."""
    factors = _world_of(examine_dir)
    world = {f.name: (float(f.low), float(f.high)) for f in factors}
    comparison = read_comparison(examine_dir)
    trained = read_trained(train_dir, world)
    located, words = read_where(comparison)
    findings = Findings(trained, read_answers(comparison), located, words, why_words=read_why(comparison))
    planted = [t for t in trained if t.narrowed]
    if len(planted) == 1 and len(planted[0].narrowed) == 1:
        factor, bounds = next(iter(planted[0].narrowed.items()))
        periodic = {f.name for f in factors if f.periodic}
        findings.planted = {"checkpoint": planted[0].name, "factor": factor, "trained": bounds,
                            "unseen": unseen_region(bounds, world[factor]),
                            "period": world[factor] if factor in periodic else None}
    return findings
