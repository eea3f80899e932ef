"""The why section as Markdown (the HTML page is rendered from the Markdown)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advaudit.core.intervals import format_interval, format_p


def why_markdown(section: dict[str, Any] | None) -> list[str]:
    """Markdown lines of the section (nothing for None): its sentences, a table per pair, the figure."""
    if not section:
        return []
    cost = section.get("cost") or {}
    lines = ["", "### Why one checkpoint is weaker: the gap by intervention", "",
             f"Held-out {section['split']} instances ({section['instances']}, seed {section['seed']}) under "
             f"{section['conditions_per_instance']} random conditions each, rendered as drawn and again with each "
             "factor, each group of factors and each pair's leading combination (the factors that explain most alone) "
             "at its reference value; every checkpoint file scores the same images"
             + (f" ({cost['renders']} renders, {cost['seconds']:.1f} s)." if cost else "."), ""]
    lines += [f"- {s}" for s in section["sentences"]]
    for result in section["pairs"]:
        lines += ["", f"| {result['a']} − {result['b']}: with ... at the reference | remaining gap (points) | "
                  "explained (points, 95% interval) | p | p (Holm) | said |", "|---|---|---|---|---|---|"]
        lines += [f"| {row['name']} | {100 * row['remaining']:+.1f} | "
                  f"{format_interval(100 * row['diff'], 100 * row['lo'], 100 * row['hi'], 1)} | {format_p(row['p'])} | "
                  f"{format_p(row['p_holm'])} | {said_cell(row)} |" for row in result["rows"]]
    if section.get("plot"):
        lines += ["", f"![why]({Path(section['plot']).name})"]
    return lines


def said_cell(row: dict[str, Any]) -> str:
    """``explains`` / ``hides`` / ``–``, with ``, confirmed`` or ``, not confirmed`` where it was checked again."""
    if not row["said"]:
        return "–"
    check = row.get("confirmation")
    return row["relation"] + ("" if not check else ", confirmed" if check["confirmed"] else ", not confirmed")
