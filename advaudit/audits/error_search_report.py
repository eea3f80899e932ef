"""Error-search results people look at: the paper's measures per query count (Figs. 2, 3, 5-7 style),
queried-confidence box plots, the LOWESS fit behind adversarial distance, the target's reliability
on the critical class, the errors found, and a markdown summary. All PNG/JSON under the run dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from advaudit.core.plots import image_grid, plt, reliability_diagram, save_figure
from advaudit.core.records import write_json
from advaudit.models.targets.calibration import expected_calibration_error, reliability_table
from advaudit.core.intervals import format_interval, mean_with_ci
from advaudit.search.lowess import lowess_fit


def _curves(results: dict[str, dict[str, Any]], key: str, path: Path, ylabel: str, log_y: bool = False) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, record in results.items():
        if f"{key}_mean" not in record:
            continue
        mean = np.array(record[f"{key}_mean"])
        queries = np.arange(1, len(mean) + 1)
        style = "--" if name == "oracle_ceiling" else "-"
        ax.plot(queries, mean, style, label=name)
        if f"{key}_lo" in record:  # intervals over independent replications only
            ax.fill_between(queries, record[f"{key}_lo"], record[f"{key}_hi"], alpha=0.2)
    if key == "sdr":
        ax.axhline(1.0, color="gray", lw=0.8)
    if log_y:
        ax.set_yscale("log", nonpositive="mask")
    ax.set_xlabel("queries")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def _confidence_box(results: dict[str, dict[str, Any]], path: Path) -> Path:
    named = [(n, r["queried_confidence"]) for n, r in results.items() if "queried_confidence" in r]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.boxplot([v for _, v in named], showfliers=False)
    ax.set_xticks(range(1, len(named) + 1), [n for n, _ in named], rotation=30, fontsize=7)
    ax.set_ylabel("confidence of queried items")
    return save_figure(fig, path)


def _lowess_plot(distance: Tensor, confidence: Tensor, is_error: Tensor, path: Path, name: str,
                 show_errors: bool) -> Path:
    d, p = distance.numpy(), confidence.double().numpy()
    fitted = lowess_fit(d, p)
    order = np.argsort(p)
    fig, ax = plt.subplots(figsize=(5, 4))
    colours = np.where(is_error.numpy(), "tab:red", "tab:blue") if show_errors else "tab:blue"
    ax.scatter(p, d, s=4, c=colours, alpha=0.5)
    ax.plot(p[order], fitted[order], color="black", lw=1.5, label="LOWESS F(p)")
    ax.set_xlabel("calibrated confidence")
    ax.set_ylabel(f"{name}: distance to adversarial")
    ax.set_title("red: model errors" if show_errors else "")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def write_report(out: Path, results: dict[str, dict[str, Any]], summary: dict[str, Any], items: Tensor,
                 confidence: Tensor, is_error: Tensor, distances: dict[str, Tensor], pools: Tensor, target: Any,
                 critical: int, primary: str, interactive: bool) -> dict[str, Path]:
    """Write plots, ``summary.json`` and ``report.md``; returns ``{name: png path}`` for W&B."""
    plots: dict[str, Path] = {
        "search/sdr": _curves(results, "sdr", out / "sdr.png", "SDR (errors found / expected)", log_y=True),
        "search/errors": _curves(results, "errors", out / "errors.png", "errors found"),
        "search/spread": _curves(results, "spread", out / "spread.png", "spread (PCA space; lower = better)"),
        "search/coverage": _curves(results, "coverage", out / "coverage.png", "Bansal & Weld coverage utility"),
        "search/confidence": _confidence_box(results, out / "queried_confidence.png"),
    }
    for name, distance in distances.items():
        plots[f"search/lowess_{name}"] = _lowess_plot(distance, confidence, is_error, out / f"lowess_{name}.png",
                                                      name, not interactive)
    if not interactive:
        probs = torch.stack([1 - confidence, confidence], 1).float()
        correct = (~is_error).long()
        summary["search/critical_class_ece"] = expected_calibration_error(probs, correct)
        plots["search/reliability"] = reliability_diagram(
            reliability_table(probs, correct), out / "reliability_critical_class.png",
            f"{target.class_names[critical]} (eligible items)")
        record = results[primary]
        found = [i for i, a in zip(record["first_pool_items"], record["first_pool_answers"]) if a]
        if found and items.dim() == 4:
            titles = [f"q{record['first_pool_items'].index(i) + 1} p={float(confidence[i]):.2f}" for i in found[:32]]
            plots["search/found_errors"] = image_grid(items[found[:32]], out / "found_errors.png", titles)
    write_json(out / "summary.json", summary)
    (out / "report.md").write_text(_markdown(results, summary, primary), encoding="utf-8")
    return plots


def _markdown(results: dict[str, dict[str, Any]], summary: dict[str, Any], primary: str) -> str:
    budget = int(summary["search/budget"])
    marks = [k for k in (5, 10, 20, 30, 50, 100) if k <= budget] or [budget]
    errors = summary["search/eligible_errors"]
    lines = [f"# Error search: {primary}", "",
             f"{summary['search/eligible']} eligible items" + (f" ({errors} errors)" if errors is not None else "") + ", "
             f"{summary['search/replications']} pools of {summary['search/pool_size']}, budget {budget}. Means over the "
             "pools of this run (they overlap: no interval here; see benchmarks/error_search/error_search_replications.py). "
             "Spread: lower is better.", "",
             "| method | " + " | ".join(f"SDR@{k}" for k in marks) + f" | errors@{budget} | spread@{budget} | "
             f"coverage@{budget} | queried confidence |",
             "|---" * (len(marks) + 5) + "|"]
    for name, record in results.items():
        cells = [f"{record['sdr_mean'][k - 1]:.2f}" for k in marks]
        for key, digits in (("errors", 1), ("spread", 3), ("coverage", 2)):
            cells.append(f"{record[f'{key}_mean'][budget - 1]:.{digits}f}" if f"{key}_mean" in record else "-")
        confidence = record.get("confidence_mean")
        cells.append(f"{float(np.mean(confidence)):.3f}" if confidence else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def aggregate_replications(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Every ``search/<method>/<measure>`` of independent runs (one ``summary.json`` per seed, each
    with a ``seed`` key) as ``{mean, lo, hi, n}`` over the runs (:func:`advaudit.core.intervals.mean_with_ci`),
    plus each method's per-seed difference to random search (paired by seed) for every measure.
    """
    methods: dict[str, dict[str, list[float]]] = {}
    for summary in summaries:
        for key, value in summary.items():
            parts = key.split("/")
            if len(parts) == 3 and parts[0] == "search" and isinstance(value, (int, float)) and "@" in parts[2] \
                    or len(parts) == 3 and parts[2] == "queried_confidence":
                methods.setdefault(parts[1], {}).setdefault(parts[2], []).append(float(value))
    table: dict[str, Any] = {
        "seeds": [s["seed"] for s in summaries], "n": len(summaries),
        "eligible": [s.get("search/eligible") for s in summaries],
        "eligible_errors": [s.get("search/eligible_errors") for s in summaries],
        "pool_size": [s.get("search/pool_size") for s in summaries],
        "replications": [s.get("search/replications") for s in summaries],
        "test_acc": [s.get("target/test_acc") for s in summaries],       # the retrained target's, when known
        "critical_class_ece": [s.get("search/critical_class_ece") for s in summaries],
        "budget": summaries[0].get("search/budget") if summaries else None,
        "methods": {name: {measure: mean_with_ci(values) for measure, values in measures.items()}
                    for name, measures in methods.items()},
    }
    random = methods.get("random", {})
    table["vs_random"] = {
        name: {measure: paired_difference(values, random[measure])
               for measure, values in measures.items() if len(random.get(measure, [])) == len(values)}
        for name, measures in methods.items() if name not in ("random", "oracle_ceiling")}
    return table


def _rounded(values: list[float | None] | None) -> str:
    return "[" + ", ".join("-" if v is None else f"{v:.3f}" for v in values or []) + "]"


def paired_difference(values: list[float], baseline: list[float], level: float = 0.95) -> dict[str, float]:
    """Per-seed differences ``values - baseline`` (both ``[n]``, paired by seed) summarised three ways:
    the percentile bootstrap of :func:`mean_with_ci` (``mean``, ``lo``, ``hi``), Student's t interval
    ``mean ± t_{n-1} · sd / sqrt(n)`` (``t_lo``, ``t_hi``: wider, and honest at the 5 seeds these runs
    have, where the percentile bootstrap of a mean under-covers), and ``above``, the number of seeds
    whose difference is > 0 (a sign count: 5 of 5 happens by chance with probability 1/32)."""
    from scipy import stats  # scipy.stats is slow to import; only this statistic needs it

    diff = np.subtract(values, baseline)
    diff = diff[np.isfinite(diff)]
    summary = mean_with_ci(diff, level)
    half = (stats.t.ppf(0.5 + level / 2, diff.size - 1) * diff.std(ddof=1) / np.sqrt(diff.size)
            if diff.size > 1 else float("nan"))
    summary.update(t_lo=float(summary["mean"] - half), t_hi=float(summary["mean"] + half), above=int((diff > 0).sum()))
    return summary


def replications_markdown(task: str, table: dict[str, Any]) -> str:
    """A RESULTS-ready table: mean [95% interval over seeds] of each measure, and SDR minus random's."""
    budget = table["budget"]
    marks = [k for k in (5, 10, 20, 50) if budget and k <= budget]

    def cell(stats: dict[str, float] | None, digits: int = 2) -> str:
        return "-" if not stats else format_interval(stats["mean"], stats["lo"], stats["hi"], digits)

    lines = [f"**{task}**: {table['n']} seeds {table['seeds']}; eligible items per seed {table['eligible']} "
             f"(errors {table['eligible_errors']}); pools of {sorted(set(table['pool_size']))} x "
             f"{sorted(set(table['replications']))} per seed, budget {budget}. Mean [95% bootstrap interval over seeds].",
             "", f"Per seed: target test accuracy {_rounded(table.get('test_acc'))}, critical-class ECE on the "
             f"eligible items {_rounded(table.get('critical_class_ece'))}.",
             "", "| method | " + " | ".join(f"SDR@{k}" for k in marks) + f" | errors@{budget} | spread@{budget} (lower "
             f"is better) | coverage@{budget} | queried confidence | SDR@20 - random |",
             "|---" * (len(marks) + 6) + "|"]
    for name, measures in table["methods"].items():
        row = [cell(measures.get(f"sdr@{k}")) for k in marks]
        row += [cell(measures.get(f"errors@{budget}"), 1), cell(measures.get(f"spread@{budget}"), 3),
                cell(measures.get(f"coverage@{budget}")), cell(measures.get("queried_confidence"), 3),
                cell(table["vs_random"].get(name, {}).get("sdr@20"))]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    lines += ["", f"SDR@k minus random search's, paired by seed: mean [95% bootstrap over seeds] (95% t interval; "
              "seeds above random).", "",
              "| method | " + " | ".join(f"SDR@{k} - random" for k in marks) + " |", "|---" * (len(marks) + 1) + "|"]
    for name, differences in table["vs_random"].items():
        cells = []
        for k in marks:
            d = differences.get(f"sdr@{k}")
            cells.append(f"{cell(d)} ({d['t_lo']:+.2f}, {d['t_hi']:+.2f}; {d['above']}/{d['n']})" if d else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
