"""The why section's figure: per pair, the part of the gap each intervention explains, with its interval."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.core.plots import plt, save_figure

COLUMNS = 2
COLOURS = {"explains": "tab:blue", "hides": "tab:orange", "opens": "tab:purple"}


def attribution_plot(section: dict[str, Any], path: str | Path) -> Path:
    """PNG: one panel per pair; a bar per intervention (accuracy points of the gap it explains, positive toward
    the gap's sign, with its 95% interval), coloured where the report says it (blue: explains, orange: hides),
    grey where it does not; a dashed line at the whole gap."""
    pairs = section["pairs"]
    columns = min(COLUMNS, max(1, len(pairs)))
    rows = max(1, math.ceil(len(pairs) / columns))
    height = 0.32 * max(len(p["rows"]) for p in pairs) + 1.2 if pairs else 2.0
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, height * rows), squeeze=False,
                             layout="constrained")
    for ax, result in zip(axes.flat, pairs):
        gap = result["gap"]["diff"]
        sign = -1.0 if gap < 0 else 1.0           # explained drawn positive when it closes the gap
        names = [r["name"] for r in result["rows"]]
        y = np.arange(len(names))[::-1]
        for yi, row in zip(y, result["rows"]):
            value, lo, hi = (100 * sign * row[k] for k in ("diff", "lo", "hi"))
            lo, hi = min(lo, hi), max(lo, hi)
            colour = COLOURS.get(row["relation"], "grey") if row["said"] else "lightgrey"
            ax.barh(yi, value, color=colour, height=0.6)
            ax.errorbar(value, yi, xerr=[[max(value - lo, 0)], [max(hi - value, 0)]], color="black", capsize=2,
                        linewidth=0.8)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.axvline(100 * abs(gap), color="tab:red", linestyle="--", linewidth=1,
                   label=f"whole gap {100 * gap:+.1f} points")
        ax.set_yticks(y, names, fontsize=7)
        ax.set_xlabel("points of the gap explained (blue) or hidden (orange)", fontsize=7)
        ax.set_title(f"{result['a']} − {result['b']} ({result['design']})", fontsize=8)
        ax.legend(fontsize=6, loc="lower right")
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(pairs):]:
        ax.axis("off")
    return save_figure(fig, path)
