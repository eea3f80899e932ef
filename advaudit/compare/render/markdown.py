"""``comparison.md``: the comparison's result as Markdown, the page every other rendering starts from.

:func:`markdown` reads the summary :func:`advaudit.compare.report.compare_records` returns (the same object
``comparison.json`` holds, and W&B's tables read: :mod:`advaudit.compare.render.wandb`) and lays it out: the
primary verdicts first, then per group its checkpoints, tables, the where and why sections and the figures.
Every sentence about a finding is the one stored beside its numbers (written once, by
:mod:`advaudit.compare.verdict`, :mod:`advaudit.compare.where.words` or :mod:`advaudit.compare.why.words`);
this module only places them. ``comparison.html`` is rendered from this Markdown
(:mod:`advaudit.compare.render.html`), so the two never disagree.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from advaudit.compare.where.words import NO_CONCENTRATION
from advaudit.core.intervals import format_interval
from advaudit.core.statistics import ALPHA, format_p


def markdown(summary: dict[str, Any]) -> str:
    """The human report: failures, what was kept apart, then per group verdicts and tables."""
    lines = ["# Checkpoint comparison", ""]
    for group in (g for g in summary["groups"] if g.get("answers")):
        lines += [f"## Answer: {group['label']}, on {group['primary']}", "", *answer_lines(group), ""]
    lines += [f"{summary['ok']} successful runs of {summary['runs']} read."]
    if summary["failed"]:
        lines += ["", "## Failed runs (not compared)", "", "| run | target | kind | error |", "|---|---|---|---|"]
        lines += [f"| `{f['run_dir']}` | `{f['target']}` | {f['error_kind']} | {f['error']} |" for f in summary["failed"]]
    for apart in summary["kept_apart"]:
        lines += ["", f"## {apart['audit']}: runs kept apart", "",
                  "These runs differ in more than the checkpoint, so they are compared separately:", ""]
        lines += [f"- `{k}`: " + " | ".join(f"`{v}`" for v in values) for k, values in apart["differs_in"].items()]
    for group in summary["groups"]:
        lines += _group_lines(group)
    return "\n".join(lines) + "\n"


def _group_lines(group: dict[str, Any]) -> list[str]:
    """One comparison group's section: its checkpoints, design, then every table it has."""
    names = group["targets"]
    lines = ["", f"## {group['label']}", "",
             "Checkpoints: " + ", ".join(f"**{n}** (`{t}`)" for t, n in names.items()) + ".",
             f"Seeds compared: {group['seeds']}.", f"Design: {group.get('design', 'n/a')}."]
    lines += [f"- note: {n}" for n in group["notes"]]
    if group.get("primary"):
        lines += [f"Primary question (declared before the data): {group['primary']}; every other metric is "
                  f"evidence for or against its verdict, Holm-corrected with it over all tests below."]
    lines += ["", "### Per checkpoint (mean, 95% interval)", ""]
    lines += table(["metric", "checkpoint", "mean", "95% interval", "over", "seeds"],
                   [[r["metric"], names[r["target"]], _fmt(r["mean"]), f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}]",
                     r["interval_over"], r["n_seeds"]] for r in group["checkpoints"]])
    lines += _pair_lines(group, names) + _replay_lines(group, names) + _factor_lines(group, names)
    lines += _class_lines(group, names) + where_markdown(group.get("where")) + why_markdown(group.get("why"))
    lines += [""] + [f"![{k}]({Path(p).name})" for k, p in group["plots"].items() if k not in ("sensitivity", "why")]
    return lines


def answer_lines(group: dict[str, Any]) -> list[str]:
    """Markdown lines of a group's answers: each pair's primary verdict, then its evidence."""
    lines = []
    for answer in group.get("answers", []):
        lines.append(f"- **{answer['text']}**")
        lines += [f"  - why: {answer['why']}"] if answer.get("why") else []
        lines += [f"  - {s['relation']}: {s['text']}" for s in answer["secondary"]]
    return lines


def table(header: list[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A pipe table: the header row, its rule, then one line per row (each cell as ``str`` gives it)."""
    return [_table_row(header), "|" + "---|" * len(header), *(_table_row(r) for r in rows)]


def _table_row(cells: Sequence[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float):
        return "–" if not math.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def _power_cell(row: dict[str, Any]) -> str:
    """``power | instances for 80%`` cells of the pairs table (resampled from the runs themselves)."""
    if not math.isfinite(row.get("power", float("nan"))):
        return "– | –"
    needed = row.get("n_for_80")
    enough = needed if needed is not None else f"more than {row['power_n_max']}"
    return f"{row['power']:.2f} | {enough} (x {row['power_k']} seeds)"


def _reads_as(row: dict[str, Any], names: dict[str, str]) -> str:
    """``primary: A weaker`` / ``supports`` / ``floor`` ...: the row's part in the answer."""
    relation = row.get("relation", "–")
    weaker = f", {names[row['weaker']]} weaker" if row.get("weaker") else ""
    status = row.get("status")
    if relation in ("primary",) and status != "weaker":
        return f"primary: {status}"
    return f"{relation}{weaker}"


def _pair_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """The paired differences table (A - B per metric and pair)."""
    if not group["pairs"]:
        return []
    header = ["metric", "A", "B", "A − B", "95% interval", "test", "p", "p (Holm, all tests)", "reads as", "instances",
              "power", "instances for 80%"]
    return ["", "### Paired differences (A − B)", ""] + table(header, [
        [r["metric"], names[r["a"]], names[r["b"]], _fmt(r["diff"]), f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}] "
         f"({r['interval_over']})", r["test"], _fmt(r["p"], 4), _fmt(r["p_holm"], 4), _reads_as(r, names),
         r["n_instances"], _power_cell(r)] for r in group["pairs"]])


def _replay_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """The replay table: how often each checkpoint's worst cases fail the others too."""
    if "replay" not in group:
        return []
    replay = group["replay"]
    targets = list(replay["transfer"])
    lines = ["", "### Replay: do the others share each checkpoint's worst cases?", "",
             "Share of the row checkpoint's failures (its worst valid conditions, re-rendered) on which the "
             "column checkpoint fails too; last row: the column's failure rate under random conditions.", ""]
    lines += table(["worst conditions of \\ scored on", *(names[t] for t in targets), "failures", "reproduced"],
                   [[names[a], *(_fmt(replay["transfer"][a][b], 2) for b in targets), replay["source_failures"][a],
                     _fmt(replay["reproduced"][a], 2)] for a in targets])
    lines += ["| random conditions | " + " | ".join(_fmt(replay["random_failure_rate"][b], 2) for b in targets)
              + " | | |"]
    return lines


def _factor_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """Where the worst cases lie, one test per searched factor and checkpoint."""
    if not group["per_factor"]:
        return []
    lines = ["", "### Where the worst cases lie (against uniform random conditions)", "",
             "One test per searched factor and checkpoint (Kolmogorov-Smirnov on an interval, Kuiper on a "
             "circle), Holm-corrected over each checkpoint's factors.", ""]
    for target in dict.fromkeys(r["target"] for r in group["per_factor"]):
        found = " ".join(r["verdict"] for r in group["per_factor"] if r["target"] == target and r["p_holm"] < ALPHA)
        lines += [f"- **{names[target]}**: " + (found or NO_CONCENTRATION)]
    header = ["checkpoint", "factor", "mean", "lowest fifth", "highest fifth", "densest fifth (centre: share)", "test",
              "statistic", "p", "p (Holm)"]
    return lines + [""] + table(header, [
        [names[r["target"]], f"{r['factor']}{' (circle)' if r['periodic'] else ''}", _fmt(r["mean"], 2),
         _fmt(r["share_low"], 2), _fmt(r["share_high"], 2), f"{r['peak']:.3g}: {_fmt(r['share_peak'], 2)}", r["test"],
         _fmt(r["statistic"], 2), _fmt(r["p"], 3), _fmt(r["p_holm"], 3)] for r in group["per_factor"]])


def _class_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """The per-class table, one column per checkpoint."""
    if not group["per_class"]:
        return []
    by = {(r["target"], r["class"]): r for r in group["per_class"]}
    rows = [[cls, *(format_interval(c["mean"], c["lo"], c["hi"], 2, undefined="–") if c else "–"
                    for c in (by.get((t, cls)) for t in names))]
            for cls in dict.fromkeys(r["class"] for r in group["per_class"])]
    return ["", f"### Per class ({group['per_class'][0]['metric']})", ""] + table(["class", *names.values()], rows)


def where_markdown(section: dict[str, Any] | None) -> list[str]:
    """Markdown lines of the section (nothing for None)."""
    if not section:
        return []
    sens = section["sensitivity"]
    lines = ["", "### Where one checkpoint is weaker than the other", "",
             f"Worst cases tested between the checkpoints per factor; a proposed region is confirmed on "
             f"{len(sens['instances'])} held-out {sens['split']} instances under new random conditions (seed "
             f"{section['seed']}); accuracy per fifth of each factor, and per band of distance from its reference "
             f"value, on {sens['conditions_per_instance']} paired random conditions per instance"
             + (f" ({section['cost']['renders']} renders, {section['cost']['seconds']:.1f} s)." if section.get("cost")
                else "."), ""]
    lines += [f"- {s}" for s in section["sentences"]]
    rows = []
    for factor in sens["factors"]:
        for name, overall in sens["overall"].items():
            mine = [r for r in sens["checkpoints"] if r["factor"] == factor["name"] and r["target"] == name]
            fifths = [f"{c['low']:.3g}-{c['high']:.3g}: {c['mean']:.2f}" for c in mine if c.get("kind", "fifth") == "fifth"]
            bands = [f"{c['low']:.3g}-{c['high']:.3g} from {c['reference']:g}: {c['mean']:.2f}"
                     for c in mine if c.get("kind") == "band"] or ["–"] * 3
            rows.append([f"{factor['name']}: {name}", f"{overall['mean']:.2f}", *fifths, *bands])
    header = ["checkpoint", "over all random conditions", *(f"fifth {k + 1}" for k in range(5)), "near the reference",
              "middle", "far (both ends)"]
    return lines + [""] + table(header, rows) + ["", f"![sensitivity]({Path(section['plot']).name})"]


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
        header = [f"{result['a']} − {result['b']}: with ... at the reference", "remaining gap (points)",
                  "explained (points, 95% interval)", "p", "p (Holm)", "said"]
        lines += [""] + table(header, [
            [row["name"], f"{100 * row['remaining']:+.1f}",
             format_interval(100 * row["diff"], 100 * row["lo"], 100 * row["hi"], 1), format_p(row["p"]),
             format_p(row["p_holm"]), said_cell(row)] for row in result["rows"]])
    if section.get("plot"):
        lines += ["", f"![why]({Path(section['plot']).name})"]
    return lines


def said_cell(row: dict[str, Any]) -> str:
    """``explains`` / ``hides`` / ``–``, with ``, confirmed`` or ``, not confirmed`` where it was checked again."""
    if not row["said"]:
        return "–"
    check = row.get("confirmation")
    return row["relation"] + ("" if not check else ", confirmed" if check["confirmed"] else ", not confirmed")
