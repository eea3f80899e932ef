"""The demo's closing lines: what accuracy said, the comparison's answer, where, why, and where the files are.

Every sentence after the first is the comparison's own (:mod:`advaudit.compare`): the demo adds
only which examiner said it and whether it is the weakness planted in training.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from advaudit.demo.findings import Findings

WIDTH = 100
MAX_WHERE = 3   # where sentences printed (the report has them all)


def _short(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _range(region: tuple[float, float]) -> str:
    return f"{region[0]:g}-{region[1]:g}"


def answer_line(findings: Findings) -> str:
    """Line 2: each examiner's primary verdict, and any secondary metric that conflicts with it."""
    if not findings.answers:
        return "The comparison gave no answer on the primary question (see its report)."
    parts = []
    for answer in findings.answers:
        text = f"{answer.examiner.upper()}: {answer.text}"
        if answer.conflicts:
            text += " Conflicting: " + " ".join(answer.conflicts)
        parts.append(text)
    named = {a.weaker for a in findings.answers if a.status == "weaker"}
    head = ("The comparison's answer (each examiner's primary question, as its config declares it): "
            + (f"{findings.weaker} is weaker. " if findings.weaker else
               "the examiners disagree. " if len(named) > 1 else "no verdict. "))
    return head + " ".join(parts)


def where_line(findings: Findings) -> str:
    """Line 3: where the comparison's where section locates a weakness: confirmed regions first, and
    within each kind the planted factor's places first, so the line never hides them behind the cut."""
    planted_factor = (findings.planted or {}).get("factor")
    located = sorted(findings.located, key=lambda p: (p.how != "confirmed", p.factor != planted_factor))
    said: list[str] = []
    for place in located:
        if place.words not in said:
            said.append(place.words)
    if not said:
        return "Where: " + (" ".join(findings.where_words[:MAX_WHERE]) if findings.where_words
                            else "the comparison located no region where one checkpoint is weaker.")
    more = f" ({len(said) - MAX_WHERE} more in the report)" if len(said) > MAX_WHERE else ""
    return "Where: " + " ".join(said[:MAX_WHERE]) + more


def why_line(findings: Findings) -> str | None:
    """Line 4: why, by intervention: the why section's headline (the report has every intervention)."""
    return ("Why: " + " ".join(findings.why_words[:1])) if findings.why_words else None


def planted_line(findings: Findings) -> str | None:
    """Line 4: whether that is the weakness planted in training."""
    planted = findings.planted
    if not (planted and planted.get("unseen")):
        return None
    what = f"{planted['checkpoint']} never saw {planted['factor']} {_range(planted['unseen'])} in training"
    if findings.found_planted:
        return f"That is the planted weakness: {what}."
    return f"The planted weakness ({what}) was not both named and located on this run."


def summary_lines(findings: Findings, root: Path, wandb_group: str) -> list[str]:
    """The summary's plain lines; every number comes from ``findings`` (the comparison's files)."""
    accuracy = ", ".join(f"{t.name} {t.test_acc:.3f}" for t in findings.trained)
    gap = abs(findings.trained[0].test_acc - findings.trained[1].test_acc) if len(findings.trained) == 2 else float("nan")
    lines = [f"Accuracy said: test accuracy {accuracy} on the same held-out renders ({100 * gap:.1f} points apart).",
             answer_line(findings), where_line(findings), why_line(findings), planted_line(findings)]
    here = _short(root)
    lines.append(f"Files: report {here}/examine/comparison/comparison.html (and .md; PNGs beside it; worst cases at 96 px "
                 f"in {here}/examine/*/worst_cases.png); offline W&B runs under {here} (group {wandb_group}; "
                 "`wandb sync` uploads them).")
    return [line for line in lines if line]


def wrapped(lines: list[str], width: int = WIDTH) -> str:
    """The summary for a terminal: each line a paragraph, wrapped with a hanging indent."""
    return "\n".join(textwrap.fill(line, width, initial_indent="  ", subsequent_indent="      ",
                                    break_on_hyphens=False, break_long_words=False) for line in lines)
