"""Comparison figures as PNG: forest plot, per-class bars, factor histograms, replay heatmap."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.core.plots import plt, save_figure
from advaudit.core.statistics import format_p


def forest_plot(rows: list[dict[str, Any]], names: dict[str, str], path: Path, title: str) -> Path:
    """One panel per metric (up to 3 a row): each checkpoint's mean with its 95% interval.

    The panels share one y axis, labelled once per row of panels, so long checkpoint names never
    run into the next panel; the layout engine keeps the title clear of the panel titles.
    """
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    targets = list(dict.fromkeys(r["target"] for r in rows))
    columns = min(3, len(metrics))
    n_rows = (len(metrics) + columns - 1) // columns
    fig, axes = plt.subplots(n_rows, columns, sharey=True, squeeze=False, layout="constrained",
                             figsize=(3.0 * columns + 1.6, (0.35 * len(targets) + 1.3) * n_rows + 0.5))
    for ax, metric in zip(axes.flat, metrics):
        mine = {r["target"]: r for r in rows if r["metric"] == metric}
        y = np.arange(len(targets))
        get = lambda key: np.array([mine.get(t, {}).get(key, np.nan) for t in targets], dtype=float)  # noqa: E731
        means, lo, hi = get("mean"), get("lo"), get("hi")
        has = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(means)
        ax.errorbar(means[has], y[has], xerr=[means[has] - lo[has], hi[has] - means[has]], fmt="o", color="tab:blue",
                    capsize=3)
        ax.plot(means[~has], y[~has], "o", color="tab:gray")
        ax.set_yticks(y, [names.get(t, t) for t in targets], fontsize=8)
        ax.set_title("\n".join(textwrap.wrap(metric + ("" if has.any() else " (no interval)"), 24)), fontsize=8)
        if not has.any():
            _unzoomed(ax, means)
        ax.tick_params(axis="x", labelsize=7)
        ax.xaxis.set_major_locator(plt.MaxNLocator(5))
        ax.grid(axis="x", alpha=0.3)
        ax.margins(y=0.25)
    axes[0, 0].invert_yaxis()  # shared: the first checkpoint on top in every panel
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)


def _unzoomed(ax: Any, means: np.ndarray) -> None:
    """A panel of points without intervals spans at least 10% of their size, so two nearly equal values
    (0.4584 and 0.4596) do not fill it as if they were far apart."""
    finite = means[np.isfinite(means)]
    if not len(finite):
        return
    span = max(float(np.ptp(finite)) * 1.5, 0.1 * float(np.abs(finite).max()), 1e-9)
    centre = (float(finite.min()) + float(finite.max())) / 2
    ax.set_xlim(centre - span / 2, centre + span / 2)


def class_bars(rows: list[dict[str, Any]], names: dict[str, str], path: Path, metric: str) -> Path:
    """Grouped bars: per class, each checkpoint's mean with its interval."""
    classes = list(dict.fromkeys(r["class"] for r in rows))
    targets = list(dict.fromkeys(r["target"] for r in rows))
    width = 0.8 / max(1, len(targets))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.6 * len(classes) * max(1, len(targets)) ** 0.5), 3.4))
    for k, target in enumerate(targets):
        lookup = {r["class"]: r for r in rows if r["target"] == target}
        means = np.array([lookup.get(c, {}).get("mean", np.nan) for c in classes], dtype=float)
        lo = np.array([lookup.get(c, {}).get("lo", np.nan) for c in classes], dtype=float)
        hi = np.array([lookup.get(c, {}).get("hi", np.nan) for c in classes], dtype=float)
        x = np.arange(len(classes)) + (k - (len(targets) - 1) / 2) * width
        ax.bar(x, means, width, label=names.get(target, target),
               yerr=[np.nan_to_num(means - lo), np.nan_to_num(hi - means)], capsize=2)
    ax.set_xticks(np.arange(len(classes)), classes, rotation=60, fontsize=7)
    ax.set_ylabel(metric)
    # above the axes: inside, the legend covered the tallest bars
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.01), ncol=min(3, len(targets)), frameon=False)
    return save_figure(fig, path)


def factor_histograms(rows: list[dict[str, Any]], factors: list[Any], names: dict[str, str], path: Path) -> Path:
    """Per searched factor: histograms of each checkpoint's worst conditions next to random ones.

    One legend for the whole figure, below the panels (inside a panel it covered the bars); each
    panel's title carries its tests' Holm-corrected p-values, one per checkpoint in legend order.
    """
    present = [f for f in factors if any(r["factor"] == f.name for r in rows)]
    targets = list(dict.fromkeys(r["target"] for r in rows))
    colors = {t: f"C{i}" for i, t in enumerate(targets)}
    columns = min(3, len(present))
    n_rows = (len(present) + columns - 1) // columns
    fig, axes = plt.subplots(n_rows, columns, figsize=(3.4 * columns, 2.7 * n_rows + 0.6), squeeze=False,
                             layout="constrained")
    for ax, factor in zip(axes.flat, present):
        bins = np.linspace(factor.low, factor.high, 11)  # on a circle the first and last bins meet
        ax.axhline(1.0 / (factor.high - factor.low), color="black", linestyle="--", linewidth=1)
        mine = [r for r in rows if r["factor"] == factor.name]
        for r in mine:
            ax.hist(r["values"], bins=bins, density=True, histtype="step", linewidth=1.5, color=colors[r["target"]])
        circle = " (circle)" if getattr(factor, "periodic", False) else ""
        holm = ", ".join(format_p(r["p_holm"]) for r in mine)
        ax.set_title(f"{factor.name} {factor.unit}".strip() + circle + f"\nHolm p: {holm}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_locator(plt.MaxNLocator(4))  # 3.4-inch panels: more ticks ran into each other
        ax.xaxis.set_major_formatter(plt.FormatStrFormatter("%.4g"))
    for ax in list(axes.flat)[len(present):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], color=colors[t], linewidth=1.5, label=names.get(t, t)) for t in targets]
    handles.append(plt.Line2D([], [], color="black", linestyle="--", linewidth=1, label="random (uniform)"))
    longest = max(len(h.get_label()) for h in handles)
    fig.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles), max(1, 120 // longest)), fontsize=8,
               title="worst conditions of", title_fontsize=8,
               frameon=False)
    fig.suptitle("where the worst cases lie (density) vs random conditions", fontsize=9)
    return save_figure(fig, path)


def replay_heatmap(matrix: dict[str, dict[str, float]], control: dict[str, float], names: dict[str, str],
                   path: Path) -> Path:
    """Rows: whose worst conditions; columns: which checkpoint scores them; cell: failure transfer."""
    targets = list(matrix)
    values = np.array([[matrix[a][b] for b in targets] for a in targets], dtype=float)
    fig, ax = plt.subplots(figsize=(1.2 * len(targets) + 2.5, 1.0 * len(targets) + 1.6))
    image = ax.imshow(values, cmap="Reds", vmin=0, vmax=1)
    for i in range(len(targets)):
        for j in range(len(targets)):
            if np.isfinite(values[i, j]):
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if values[i, j] > 0.6 else "black")
    labels = [names.get(t, t) for t in targets]
    ax.set_xticks(range(len(targets)), [f"{n}\n(random {control.get(t, float('nan')):.2f})"
                                        for n, t in zip(labels, targets)], fontsize=7)
    ax.set_yticks(range(len(targets)), labels, fontsize=7)
    ax.set_xlabel("scored on (its failure rate under random conditions)")
    ax.set_ylabel("worst conditions found for")
    fig.colorbar(image, ax=ax, label="share of failures that transfer")
    return save_figure(fig, path)
