"""The sensitivity figure: for each factor, every checkpoint's accuracy per fifth of its range."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.core.plots import plt, save_figure

COLUMNS = 4


def sensitivity_plot(record: dict[str, Any], path: str | Path) -> Path:
    """PNG: one panel per factor; x the fifths of its range (factor units), y accuracy on paired random
    conditions with 95% intervals over instances, one line per checkpoint; a fifth where the report says
    one checkpoint loses more than another is shaded and starred."""
    factors = record["factors"]
    names = list(record["overall"])
    columns = min(COLUMNS, max(1, len(factors)))
    rows = max(1, math.ceil(len(factors) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.3 * columns, 2.5 * rows + 0.8), squeeze=False,
                             layout="constrained")
    said = {(r["factor"], r["fifth"]) for r in record["pairs"] if r["said"] and r.get("kind", "fifth") == "fifth"}
    ends = {r["factor"] for r in record["pairs"] if r["said"] and r.get("kind") == "band" and r["fifth"] > 0}
    for ax, factor in zip(axes.flat, factors):
        cells = [r for r in record["checkpoints"] if r["factor"] == factor["name"] and r.get("kind", "fifth") == "fifth"]
        centres = [(r["low"] + r["high"]) / 2 for r in cells if r["target"] == names[0]]
        width = (factor["high"] - factor["low"]) / 5
        for k, centre in enumerate(centres):
            if (factor["name"], k) in said:
                ax.axvspan(centre - width / 2, centre + width / 2, color="tab:red", alpha=0.12, linewidth=0)
                ax.text(centre, 1.06, "*", ha="center", va="center", color="tab:red", fontsize=12)
        for j, name in enumerate(names):
            mine = [r for r in cells if r["target"] == name]
            mean = np.array([r["mean"] for r in mine])
            errors = np.nan_to_num(np.array([mean - [r["lo"] for r in mine], [r["hi"] for r in mine] - mean]))
            offset = (j - (len(names) - 1) / 2) * width * 0.08
            ax.errorbar(np.array(centres) + offset, mean, yerr=np.clip(errors, 0, None), marker="o", markersize=3,
                        capsize=2, linewidth=1.2, color=f"C{j}", label=name)
        unit = f" ({factor['unit']})" if factor["unit"] else ""
        ax.set_title(factor["name"] + unit + (" (* away from its reference)" if factor["name"] in ends else ""),
                     fontsize=9, color="tab:red" if factor["name"] in ends else "black")
        ax.set_xlim(factor["low"], factor["high"])
        ax.set_xticks(np.linspace(factor["low"], factor["high"], 6))
        ax.tick_params(labelsize=7)
        ax.set_ylim(0, 1.12)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(factors):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(names), 4), fontsize=8, frameon=False)
    fig.suptitle("Accuracy per fifth of each factor (paired random conditions; * the report names a difference)",
                 fontsize=10)
    return save_figure(fig, path)
