"""The comparison of any set of runs: groups, statistics, breakdowns, replay, and the files.

Writes into ``out_dir``: ``comparison.md`` (the primary verdicts first, then the evidence, tables
and figures: :mod:`advaudit.compare.verdict`), ``comparison.html`` (the same page with its figures
embedded: :mod:`advaudit.compare.html`), ``comparison.json``
(everything, machine-readable), ``checkpoints.csv``, ``pairs.csv`` (with each paired test's power,
resampled from the runs: :mod:`advaudit.compare.power`), ``per_class.csv``,
``per_factor.csv``, ``replay.csv``, and PNGs per group (``forest_*.png``, ``per_class_*.png``,
``factors_*.png``, ``replay_*.png``).
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from advaudit.compare import plots
from advaudit.compare.html import write_html
from advaudit.compare.breakdowns import per_class, per_factor, searched_factors
from advaudit.compare.design import Group, differences_between, group_runs, plan_pairs
from advaudit.compare.metrics import metrics_for
from advaudit.compare.power import pair_power
from advaudit.compare.records import RunRecord, discover_runs
from advaudit.compare.replay import replay as run_replay
from advaudit.compare.stats import checkpoint_summary, compare_pairs, paired_frame, verdict
from advaudit.compare.verdict import answer_lines, answers, primary_metric, primary_note
from advaudit.compare.confirm import Settings
from advaudit.compare.where_section import where_markdown, where_section
from advaudit.compare.why.report import why_markdown
from advaudit.compare.why.section import user_groups, why_section
from advaudit.core.intervals import format_interval
from advaudit.core.naming import short_names
from advaudit.core.records import write_json
from advaudit.worlds import build_world
from advaudit.worlds.references import groups_of

log = logging.getLogger(__name__)


def compare_runs(roots: Iterable[str | Path], out_dir: str | Path, replay: bool = True,
                 primary: str | None = None, where: Settings = Settings(),
                 recipes: dict[str, str] | None = None, baseline: str | None = None,
                 all_pairs: bool = False) -> dict[str, Any]:
    """Compare every group of comparable runs under ``roots``; write the report into ``out_dir``
    (``where``: how much the held-out checks of where and why one checkpoint is weaker render; ``recipes``:
    name -> shell pattern of checkpoint paths, runs labelled by recipe; ``baseline``, ``all_pairs``: which
    pairs, :func:`advaudit.compare.design.plan_pairs`)."""
    records = discover_runs(roots, recipes)
    return compare_records(records, out_dir, replay, primary, where, baseline, all_pairs)


def compare_records(records: list[RunRecord], out_dir: str | Path, replay: bool = True,
                    primary: str | None = None, where: Settings = Settings(), baseline: str | None = None,
                    all_pairs: bool = False) -> dict[str, Any]:
    """The comparison of ``records`` (``primary``: the metric every group answers on, else each declared one;
    ``baseline``/``all_pairs``: every other checkpoint against ``baseline``, or every pair)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = group_runs(records)
    for group in groups:
        plan_pairs(group, baseline, all_pairs)
    summary: dict[str, Any] = {
        "runs": len(records), "ok": sum(r.ok for r in records),
        "failed": [{"run_dir": str(r.run_dir), "target": r.target, "error": r.error, "error_kind": r.error_kind}
                   for r in records if not r.ok],
        "kept_apart": differences_between(groups),
        "groups": [compare_group(g, out, replay, primary, where) for g in groups],
    }
    summary["files"] = write_files(summary, out)
    return summary


def compare_group(group: Group, out: Path, replay: bool, primary_key: str | None = None,
                  where: Settings = Settings()) -> dict[str, Any]:
    """Statistics, the primary verdicts, breakdowns, replay and figures for one group of comparable runs."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", group.label).strip("_")
    names = short_names(group.targets)
    seeds = group.common_seeds()
    metrics = metrics_for(group.audit, group.runs)
    result: dict[str, Any] = {"label": group.label, "slug": slug, "audit": group.audit, "method": group.method,
                              "targets": names, "seeds": seeds, "notes": list(group.notes),
                              "metrics": [m.key for m in metrics], "plots": {}}
    result["design"] = design_of_group(group, seeds)
    result["checkpoints"] = [checkpoint_summary(group, t, m, seeds) for m in metrics for t in group.targets]
    primary = primary_metric(metrics, group.runs, primary_key)
    pairs = compare_pairs(group, metrics, seeds, primary.key if primary else None) if len(group.targets) >= 2 else []
    by_key = {m.key: m for m in metrics}
    result["primary"] = primary.key if primary else None
    if not primary_key and primary_note(metrics, group.runs, primary):
        result["notes"].append(str(primary_note(metrics, group.runs, primary)))
    for row in pairs:
        row["verdict"] = verdict(row, by_key[row["metric"]], names, group.label)
    result["answers"] = answers(pairs, metrics, primary, names, result["checkpoints"]) if primary and pairs else []
    for answer, row in ((a, r) for a in result["answers"] for r in pairs
                        if (r["a"], r["b"], r["metric"]) == (a["a"], a["b"], a["metric"])):
        if row.get("units") in ("instances", "instance x seed") and answer["status"] in ("weaker", "differ", "none"):
            metric = by_key[row["metric"]]  # power of the primary question only; none for identical scores or bounds
            row.update(pair_power(paired_frame(group, row["a"], row["b"], metric, seeds), metric.binary))
            row["verdict"] += " " + str(row["power_words"])
            if answer["status"] == "none":  # advice where it helps: no verdict yet
                answer["text"] += " " + str(row["power_words"])
    result["pairs"] = pairs
    if result["checkpoints"]:
        result["plots"]["forest"] = str(plots.forest_plot(result["checkpoints"], names, out / f"forest_{slug}.png",
                                                          f"{group.label}: mean and 95% interval"))
    by_class = primary if primary and primary.column else next((m for m in metrics if m.column), None)
    world, factors = _world(group)
    class_names = list(getattr(world, "class_names", []) or []) or None
    result["per_class"] = per_class(group, by_class, seeds, class_names) if by_class else []
    if result["per_class"]:
        result["plots"]["per_class"] = str(plots.class_bars(result["per_class"], names, out / f"per_class_{slug}.png",
                                                            by_class.key))
    result["per_factor"] = per_factor(group, seeds, factors, searched_factors(factors, group.design)) if factors else []
    if result["per_factor"]:
        result["plots"]["factors"] = str(plots.factor_histograms(result["per_factor"], factors, names,
                                                                 out / f"factors_{slug}.png"))
    if replay and group.audit == "worst_case" and world is not None:
        try:
            matrix = run_replay(group, seeds)
            matrix["rows"].assign(group=group.label).to_csv(out / f"replay_{slug}.csv", index=False)
            result["replay"] = {k: v for k, v in matrix.items() if k != "rows"}
            result["plots"]["replay"] = str(plots.replay_heatmap(matrix["transfer"], matrix["random_failure_rate"],
                                                                 names, out / f"replay_{slug}.png"))
        except Exception as error:  # a replay that cannot run (a checkpoint moved) must not lose the report
            log.warning("replay of %s skipped: %s", group.label, error)
            result["notes"].append(f"replay skipped: {error}")
    if replay and world is not None:
        groups_of(world, user_groups(group, where))   # a group of the user's naming an unknown factor: one line, exit 2
        add_section(result, "where", where_section, group, names, out, slug, where)
        add_section(result, "why", why_section, group, names, out, slug, where)
    for answer in result["answers"]:
        pair = {names.get(answer["a"], answer["a"]), names.get(answer["b"], answer["b"])}
        found = [p for p in (result.get("why") or {}).get("pairs", []) if {p["a"], p["b"]} == pair]
        if found:
            answer["why"] = found[0]["headline_words"]
    return result


def add_section(result: dict[str, Any], key: str, build: Any, group: Group, names: dict[str, str], out: Path,
                slug: str, settings: Settings = Settings()) -> None:
    """``result[key]``: a section ``build(group, names, out, slug, settings)`` returns (the where section,
    :mod:`advaudit.compare.where_section`; the why section, :mod:`advaudit.compare.why`), its figure under
    ``result["plots"][key]``. A section that cannot run (a checkpoint moved) becomes a note: the report is kept."""
    try:
        section = build(group, names, out, slug, settings)
    except Exception as error:  # a check that cannot run must not lose the report
        log.warning("%s section of %s skipped: %s", key, group.label, error)
        result["notes"].append(f"{key} section skipped: {error}")
        return
    if section is not None:
        result[key] = section
        if section.get("plot"):
            result["plots"]["sensitivity" if key == "where" else key] = section["plot"]


def design_of_group(group: Group, seeds: list[int]) -> str:
    """In words: are the checkpoints compared on the same instances (paired) at every common seed?"""
    if len(group.targets) < 2:
        return "one checkpoint"
    selection = (group.design.get("audit") or {}).get("selection")
    shared = []
    for seed in seeds:
        sets = [group.run(t, seed).per_instance() for t in group.targets]  # type: ignore[union-attr]
        if any(s is None for s in sets):
            return "paired over seeds only (no per-instance records)"
        shared.append(len({tuple(sorted(s["instance"])) for s in sets}) == 1)
    chosen = f" (audit.selection={selection})" if selection else ""
    if shared and all(shared):
        return f"paired: every checkpoint was examined on the same instances at each seed{chosen}"
    return f"not fully paired: checkpoints were examined on different instances{chosen}; see the notes"


def _world(group: Group) -> tuple[Any, list[Any]]:
    """The group's world rebuilt from its config (None when the audit has no world)."""
    world_cfg = group.runs[0].config.get("world")  # resolved (the design may hold interpolations)
    if not world_cfg or group.audit not in ("worst_case",):
        return None, []
    try:
        world = build_world(world_cfg)
        return world, list(world.factors)
    except Exception as error:
        group.notes.append(f"world could not be rebuilt from the run config: {error}")
        return None, []


def write_files(summary: dict[str, Any], out: Path) -> dict[str, str]:
    """comparison.json / .md and the CSV tables; returns their paths."""
    tables = {"checkpoints": "checkpoints", "pairs": "pairs", "per_class": "per_class", "per_factor": "per_factor"}
    files: dict[str, str] = {}
    for name, key in tables.items():
        rows = [{"group": g["label"], **{k: v for k, v in r.items() if k != "values"}}
                for g in summary["groups"] for r in g.get(key, [])]
        if rows:
            pd.DataFrame(rows).to_csv(out / f"{name}.csv", index=False)
            files[name] = str(out / f"{name}.csv")
    files["json"] = str(write_json(out / "comparison.json", {**summary, "files": files}))
    (out / "comparison.md").write_text(markdown(summary))
    files["md"] = str(out / "comparison.md")
    files["html"] = str(write_html(out / "comparison.md", out / "comparison.html"))
    return files


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
    lines += ["", "### Per checkpoint (mean, 95% interval)", "", "| metric | checkpoint | mean | 95% interval | over | seeds |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['metric']} | {names[r['target']]} | {_fmt(r['mean'])} | [{_fmt(r['lo'])}, {_fmt(r['hi'])}] | "
              f"{r['interval_over']} | {r['n_seeds']} |" for r in group["checkpoints"]]
    lines += _pair_lines(group, names) + _replay_lines(group, names) + _factor_lines(group, names)
    lines += _class_lines(group, names) + where_markdown(group.get("where")) + why_markdown(group.get("why"))
    lines += [""] + [f"![{k}]({Path(p).name})" for k, p in group["plots"].items() if k not in ("sensitivity", "why")]
    return lines


def _pair_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """The paired differences table (A - B per metric and pair)."""
    if not group["pairs"]:
        return []
    lines = ["", "### Paired differences (A − B)", "",
             "| metric | A | B | A − B | 95% interval | test | p | p (Holm, all tests) | reads as | instances | "
             "power | instances for 80% |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['metric']} | {names[r['a']]} | {names[r['b']]} | {_fmt(r['diff'])} | "
              f"[{_fmt(r['lo'])}, {_fmt(r['hi'])}] ({r['interval_over']}) | {r['test']} | {_fmt(r['p'], 4)} | "
              f"{_fmt(r['p_holm'], 4)} | {_reads_as(r, names)} | {r['n_instances']} | {_power_cell(r)} |"
              for r in group["pairs"]]
    return lines


def _replay_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """The replay table: how often each checkpoint's worst cases fail the others too."""
    if "replay" not in group:
        return []
    replay = group["replay"]
    targets = list(replay["transfer"])
    lines = ["", "### Replay: do the others share each checkpoint's worst cases?", "",
             "Share of the row checkpoint's failures (its worst valid conditions, re-rendered) on which the "
             "column checkpoint fails too; last row: the column's failure rate under random conditions.", "",
             "| worst conditions of \\ scored on | " + " | ".join(names[t] for t in targets)
             + " | failures | reproduced |", "|---|" + "---|" * (len(targets) + 2)]
    lines += [f"| {names[a]} | " + " | ".join(_fmt(replay["transfer"][a][b], 2) for b in targets)
              + f" | {replay['source_failures'][a]} | {_fmt(replay['reproduced'][a], 2)} |" for a in targets]
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
        found = " ".join(r["verdict"] for r in group["per_factor"] if r["target"] == target and r["p_holm"] < 0.05)
        lines += [f"- **{names[target]}**: " + (found or "no factor shows a concentration of worst cases at 5% "
                                                 "after correction.")]
    lines += ["", "| checkpoint | factor | mean | lowest fifth | highest fifth | densest fifth (centre: share) | "
              "test | statistic | p | p (Holm) |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {names[r['target']]} | {r['factor']}{' (circle)' if r['periodic'] else ''} | {_fmt(r['mean'], 2)} | "
              f"{_fmt(r['share_low'], 2)} | {_fmt(r['share_high'], 2)} | {r['peak']:.3g}: {_fmt(r['share_peak'], 2)} | "
              f"{r['test']} | {_fmt(r['statistic'], 2)} | {_fmt(r['p'], 3)} | {_fmt(r['p_holm'], 3)} |"
              for r in group["per_factor"]]
    return lines


def _class_lines(group: dict[str, Any], names: dict[str, str]) -> list[str]:
    """The per-class table, one column per checkpoint."""
    if not group["per_class"]:
        return []
    lines = ["", f"### Per class ({group['per_class'][0]['metric']})", "",
             "| class | " + " | ".join(names.values()) + " |", "|---|" + "---|" * len(names)]
    by = {(r["target"], r["class"]): r for r in group["per_class"]}
    for cls in dict.fromkeys(r["class"] for r in group["per_class"]):
        cells = [by.get((t, cls)) for t in names]
        lines.append(f"| {cls} | " + " | ".join(
            format_interval(c["mean"], c["lo"], c["hi"], 2, undefined="–") if c else "–" for c in cells) + " |")
    return lines
