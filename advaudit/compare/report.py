"""The comparison of any set of runs: groups, statistics, breakdowns, replay, the where and why sections, and
the files.

Writes into ``out_dir``: ``comparison.md`` (the primary verdicts first, then the evidence, tables
and figures: :mod:`advaudit.compare.verdict`, laid out by :mod:`advaudit.compare.render.markdown`),
``comparison.html`` (the same page with its figures embedded: :mod:`advaudit.compare.render.html`),
``comparison.json`` (everything, machine-readable; W&B logs the same object:
:mod:`advaudit.compare.render.wandb`), ``checkpoints.csv``, ``pairs.csv`` (with each paired test's power,
resampled from the runs: :mod:`advaudit.compare.power`), ``per_class.csv``, ``per_factor.csv``, ``replay.csv``,
and PNGs per group (``forest_*.png``, ``per_class_*.png``, ``factors_*.png``, ``replay_*.png``:
:mod:`advaudit.compare.render.figures`).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from advaudit.compare.design import Group, design_of_group, differences_between, group_runs, plan_pairs
from advaudit.compare.differences import checkpoint_summary, compare_pairs, paired_frame
from advaudit.compare.metrics import metrics_for
from advaudit.compare.power import pair_power
from advaudit.compare.records import RunRecord, discover_runs
from advaudit.compare.render import figures
from advaudit.compare.render.html import write_html
from advaudit.compare.render.markdown import markdown
from advaudit.compare.verdict import answers, primary_metric, primary_note, row_verdict
from advaudit.compare.where.breakdowns import per_class, per_factor, searched_factors
from advaudit.compare.where.confirm import Settings
from advaudit.compare.where.replay import replay as run_replay
from advaudit.compare.where.section import where_section
from advaudit.compare.why.section import user_groups, why_section
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
        row["verdict"] = row_verdict(row, by_key[row["metric"]], names, group.label)
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
        result["plots"]["forest"] = str(figures.forest_plot(result["checkpoints"], names, out / f"forest_{slug}.png",
                                                          f"{group.label}: mean and 95% interval"))
    by_class = primary if primary and primary.column else next((m for m in metrics if m.column), None)
    world, factors = _world(group)
    class_names = list(getattr(world, "class_names", []) or []) or None
    result["per_class"] = per_class(group, by_class, seeds, class_names) if by_class else []
    if result["per_class"]:
        result["plots"]["per_class"] = str(figures.class_bars(result["per_class"], names, out / f"per_class_{slug}.png",
                                                            by_class.key))
    result["per_factor"] = per_factor(group, seeds, factors, searched_factors(factors, group.design)) if factors else []
    if result["per_factor"]:
        result["plots"]["factors"] = str(figures.factor_histograms(result["per_factor"], factors, names,
                                                                 out / f"factors_{slug}.png"))
    if replay and group.searches_world and world is not None:
        try:
            matrix = run_replay(group, seeds)
            matrix["rows"].assign(group=group.label).to_csv(out / f"replay_{slug}.csv", index=False)
            result["replay"] = {k: v for k, v in matrix.items() if k != "rows"}
            result["plots"]["replay"] = str(figures.replay_heatmap(matrix["transfer"], matrix["random_failure_rate"],
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
    :mod:`advaudit.compare.where.section`; the why section, :mod:`advaudit.compare.why`), its figure under
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


def _world(group: Group) -> tuple[Any, list[Any]]:
    """The group's world rebuilt from its config (None when the audit has no world)."""
    world_cfg = group.runs[0].config.get("world")  # resolved (the design may hold interpolations)
    if not world_cfg or not group.searches_world:
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
