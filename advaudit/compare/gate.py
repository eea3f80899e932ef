"""A regression gate on a comparison: is any candidate weaker than the baseline on the primary question?

A candidate *fails* the gate when the comparison names it weaker than the baseline on the group's
primary metric (Holm-corrected p < 0.05 over every test of the group; not identical, not at a floor
or ceiling: :mod:`advaudit.compare.verdict`) **and** its whole 95% interval of (candidate − baseline),
oriented so that positive means weaker, lies beyond ``margin`` (in the metric's own units). A
difference the data cannot tell from the margin passes; so does one the metric cannot see. Every
candidate of every group that holds the baseline is judged; the result is written as JUnit XML
(one ``testcase`` per candidate and group) for CI systems to show.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from advaudit.core.naming import short_names
from advaudit.errors import require

GATE_FILE = "gate.xml"


def baseline_target(summary: dict[str, Any], baseline: str) -> dict[str, str]:
    """``{group label: baseline target}`` for the groups holding ``baseline`` (short name or target).

    Raises:
        AdvauditError: one line naming the checkpoints that exist when no group holds ``baseline``.
    """
    found: dict[str, str] = {}
    known: list[str] = []
    for group in summary["groups"]:
        for target, name in group["targets"].items():
            known.append(name)
            if baseline in (name, target):
                found[group["label"]] = target
    require(found, f"--gate {baseline}: no compared checkpoint has that name; use one of "
                   f"{sorted(dict.fromkeys(known))} (as the comparison names them)")
    return found


def _degradation(row: dict[str, Any], candidate: str, higher_is_better: bool) -> tuple[float, float, float]:
    """``(d, lo, hi)`` of the candidate's loss against the baseline (positive: candidate weaker)."""
    sign = 1.0 if row["a"] == candidate else -1.0           # rows hold a - b
    if higher_is_better:
        sign = -sign
    d, lo, hi = sign * row["diff"], sign * row.get("lo", math.nan), sign * row.get("hi", math.nan)
    return d, min(lo, hi), max(lo, hi)


def gate(summary: dict[str, Any], baseline: str, margin: float = 0.0) -> list[dict[str, Any]]:
    """One case per candidate and group: ``{"group", "candidate", "baseline", "failed", "message", ...}``."""
    require(math.isfinite(margin) and margin >= 0, f"--margin {margin}: use a number >= 0 (in the primary "
                                                   f"metric's units)")
    cases = []
    for group in summary["groups"]:
        base = baseline_target(summary, baseline).get(group["label"])
        if base is None or not group.get("primary"):
            continue
        names = group["targets"]
        for row in group["pairs"]:
            if row["metric"] != group["primary"] or base not in (row["a"], row["b"]):
                continue
            candidate = row["b"] if row["a"] == base else row["a"]
            cases.append(_case(group, row, candidate, base, names, margin))
    require(cases, f"--gate {baseline}: no other checkpoint was compared with it on the primary question, so "
                   "nothing was gated; examine the candidates with the same settings as the baseline")
    return cases


def _case(group: dict[str, Any], row: dict[str, Any], candidate: str, base: str, names: dict[str, str],
          margin: float) -> dict[str, Any]:
    """The gate's judgement of one candidate against the baseline (module docstring)."""
    metric = group["primary"]
    require(row.get("higher_is_better") is not None, f"--gate: the primary metric {metric} has no better direction, "
            "so nothing is worse on it; name one that has with --primary")
    answer = next(a for a in group["answers"] if {a["a"], a["b"]} == {candidate, base})
    d, lo, hi = _degradation(row, candidate, bool(row["higher_is_better"]))
    failed = bool(row.get("status") == "weaker" and row.get("weaker") == candidate and math.isfinite(lo)
                  and lo > margin)
    name, base_name = names[candidate], names[base]
    if failed:
        message = (f"{name} is weaker than {base_name} on {metric} beyond the margin {margin:g}: "
                   f"difference {d:+.3f} [{lo:+.3f}, {hi:+.3f}] (positive: {name} weaker), "
                   f"Holm-corrected p = {row['p_holm']:.2g} ({group['label']})")
    else:
        message = f"{name} passes against {base_name} on {metric} (margin {margin:g}): {answer['text']}"
    return {"group": group["label"], "candidate": name, "candidate_target": candidate, "baseline": base_name,
            "metric": metric, "failed": failed,
            "difference": d, "lo": lo, "hi": hi, "p_holm": row.get("p_holm"), "margin": margin, "message": message}


def write_junit(cases: list[dict[str, Any]], path: Path) -> Path:
    """JUnit XML: one ``testsuite`` ``advaudit gate``, one ``testcase`` per case, ``failure`` when it failed."""
    suite = ET.Element("testsuite", name="advaudit gate", tests=str(len(cases)),
                       failures=str(sum(c["failed"] for c in cases)), errors="0", skipped="0")
    for case in cases:
        element = ET.SubElement(suite, "testcase", classname=f"advaudit.compare.{case['group']}",
                                name=f"{case['candidate']} vs {case['baseline']} on {case['metric']}")
        if case["failed"]:
            ET.SubElement(element, "failure", message=case["message"], type="regression").text = case["message"]
        else:
            ET.SubElement(element, "system-out").text = case["message"]
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    return path


def require_known_baseline(targets: list[list[str]], baseline: str, flag: str = "--gate") -> None:
    """Refuse ``--gate BASELINE`` (or ``flag``) before any comparison runs when no group of ``targets`` (each group's
    checkpoints, as its runs name them) holds it, by its short name (as the report gives it) or in full."""
    known = [name for group in targets for name in [*short_names(group).values(), *group]]
    require(baseline in known, f"{flag} {baseline}: no checkpoint to compare has that name; use one of "
            f"{sorted(dict.fromkeys(short for group in targets for short in short_names(group).values()))} "
            "(as the comparison names them)")


def run_gate(summary: dict[str, Any], out: Path, baseline: str, margin: float,
             cases: list[dict[str, Any]] | None = None) -> int:
    """Judge every candidate against ``baseline`` (or take the ``cases`` judged already), write ``gate.xml``,
    print the outcome; 1 when one fails."""
    cases = gate(summary, baseline, margin) if cases is None else cases
    path = write_junit(cases, out / GATE_FILE)
    failed = [c for c in cases if c["failed"]]
    for case in failed:
        print(f"gate failed: {case['message']}")
    if not failed:
        print(f"gate passed: no checkpoint is weaker than {baseline} on the primary question beyond {margin:g} "
              f"({len(cases)} compared)")
    print(f"gate: {path}")
    return 1 if failed else 0
