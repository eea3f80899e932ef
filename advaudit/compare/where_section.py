"""The comparison's ``where`` section for one worst-case group: tested, confirmed, and per cell of each factor.

For every pair of checkpoints (names as the report shows them; a checkpoint is one file or a recipe of several,
:mod:`advaudit.compare.units`):

1. **tested** between the checkpoints on their worst cases (:mod:`advaudit.compare.where`; a recipe's files
   pooled): one two-sample test per searched factor, Holm over the factors, a region proposed where the
   corrected p is below ``alpha``;
2. **confirmed** on held-out instances under new random conditions in that region
   (:mod:`advaudit.compare.confirm`; two recipes over their files), Holm over the group's confirmations;
3. **per cell**: each checkpoint's accuracy per fifth of every factor and per band of distance from its
   reference (:mod:`advaudit.compare.cells`) on paired random conditions, and the checkpoint x cell difference
   (:mod:`advaudit.compare.sensitivity`; two recipes over their files, every pair of files agreeing:
   :mod:`advaudit.compare.sensitivity_recipes`), with a PNG;
4. for two recipes, the said cell with the largest difference **confirmed** on held-out instances other than
   those that proposed it (the next ones of the same draw). Between single files no such check runs: a control
   pair (two seeds of one recipe) would confirm its own difference as readily, so their findings are said to be
   about the files.

Every file of every checkpoint scores the same held-out renders. The checks are seeded with the group's first
seed; the held-out instances are the same for 2 and 3 (their conditions differ). :func:`where_markdown` and
:func:`where_html` turn the section into report text.
"""

from __future__ import annotations

import base64
import html
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.compare.breakdowns import pooled_instances, searched_factors, worst_conditions
from advaudit.compare.confirm import Settings, choose_instances, confirm, decide
from advaudit.compare.design import Group
from advaudit.compare.units import checks_of, units_of
from advaudit.compare.sensitivity import measure
from advaudit.compare.where import Axis, between_checkpoints, holm, strongest, test_words
from advaudit.compare.where_plots import sensitivity_plot

_MEASURED: dict[str, dict[str, Any]] = {}   # sensitivity of the last (world, targets, instances, seed): groups share it


def worst_values(group: Group, names: dict[str, str], seeds: list[int]) -> dict[str, dict[str, np.ndarray]]:
    """``{factor: {name: worst-case values [n]}}`` pooled over ``seeds`` and a recipe's files (one per instance,
    seed and file)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for target in group.targets:
        frame = pooled_instances(group, target, seeds)
        if frame is None or "worst_s" not in frame:
            continue
        for factor, column in worst_conditions(frame).items():
            out.setdefault(str(factor), {})[names[target]] = column.astype(float).dropna().to_numpy()
    return out


def where_section(group: Group, names: dict[str, str], out: Path, slug: str,
                  settings: Settings = Settings()) -> dict[str, Any] | None:
    """The section (module docstring) for a worst-case group of two or more checkpoints, else None."""
    started = time.perf_counter()
    setup = checks_of(group)
    if setup is None:
        return None
    config, world, split, calibrated, seed, seeds = (setup.config, setup.world, setup.split, setup.calibrated,
                                                      setup.seed, setup.seeds)
    units = units_of(group, names)
    targets = units.load(world)                          # a checkpoint that cannot be loaded stops here
    axes = [Axis.of(f) for f in world.factors if f.name in searched_factors(list(world.factors), group.design)]
    values = worst_values(group, names, seeds)
    section: dict[str, Any] = {"alpha": settings.alpha, "seed": seed, "settings": asdict(settings), "pairs": [],
                               "files": units.short}
    for a, b in group.name_pairs(names):
        tests = holm(between_checkpoints(values, axes, (a, b), seed=seed))
        best = strongest(tests)
        section["pairs"].append({"a": a, "b": b, "tests": [t.as_dict() for t in tests],
                                 "design": "recipes" if units.both_recipes(a, b) else "files",
                                 "proposed": best.as_dict() if best and best.proposed(settings.alpha) else None,
                                 "tested_words": test_words(best, settings.alpha) if best else
                                 "No worst-case conditions to compare between them.", "confirmation": None})
    available = len(world.instances(split))
    n = max(1, min(settings.instances, available // 2 if units.recipes else available))
    z = choose_instances(world, split, n, seed)
    checks = []
    for pair in section["pairs"]:
        if pair["proposed"]:
            cell = {"factor": pair["proposed"]["factor"], "region": pair["proposed"]["region"], "kind": "region"}
            pair["confirmation"] = confirm(world, z, targets, units.sides, (pair["a"], pair["b"]), cell, seed,
                                           settings, calibrated) | {"split": split}
            checks.append(pair["confirmation"])
    decide(checks, settings.alpha)
    key = json.dumps([config["world"], calibrated, units.sides, units.values, split, seed, n, asdict(settings),
                      group.pairs()],
                     sort_keys=True, default=str)
    if key not in _MEASURED:
        _MEASURED.clear()
        _MEASURED[key] = measure(world, z, targets, units.sides, seed + 1, settings, calibrated, group.name_pairs(names))
    section["sensitivity"] = _MEASURED[key] | {"split": split}
    section["recipe_checks"] = confirm_said_cells(world, targets, units.sides, section["sensitivity"], split, seed,
                                                  n, settings, calibrated) if units.recipes else []
    section["plot"] = str(sensitivity_plot(section["sensitivity"], out / f"sensitivity_{slug}.png"))
    section["sentences"] = sentences(section)
    renders = [c["conditions_per_instance"] * len(c["instances"]) for c in checks + section["recipe_checks"]
               if "instances" in c]
    sensitivity = section["sensitivity"]
    section["cost"] = {"renders": sum(renders) + sensitivity["conditions_per_instance"] * len(sensitivity["instances"]),
                       "seconds": round(time.perf_counter() - started, 2)}
    return section


def confirm_said_cells(world: Any, targets: dict[str, Any], sides: dict[str, tuple[str, ...]],
                       sensitivity: dict[str, Any], split: str, seed: int, n: int, settings: Settings,
                       calibrated: bool) -> list[dict[str, Any]]:
    """For each pair of recipes, the said cell with the largest difference checked on held-out instances other
    than those that proposed it (the next ``n`` of the same draw) under new conditions in the cell, over the
    recipes' files (Holm over the checks)."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sensitivity["pairs"]:
        pair = (row["a"], row["b"])
        if row["said"] and row.get("design") == "recipes" and (pair not in best or abs(row["diff"]) > abs(best[pair]["diff"])):
            best[pair] = row
    z = choose_instances(world, split, n, seed, skip=n)
    if not best or len(z) < 2:
        return [{"a": a, "b": b, "checked": False} for a, b in best]
    checks = [confirm(world, z, targets, sides, pair, row, seed + 2, settings, calibrated) | {"split": split}
              for pair, row in best.items()]
    decide(checks, settings.alpha)
    return checks


def sentences(section: dict[str, Any]) -> list[str]:
    """What the section says, in order: per pair tested and confirmed, the said cells, the recipes' checks."""
    lines = []
    for pair in section["pairs"]:
        lines.append(f"{pair['a']} vs {pair['b']}: {pair['tested_words']}")
        if pair["confirmation"]:
            lines.append(pair["confirmation"]["words"])
    rows = sorted(section["sensitivity"]["pairs"], key=lambda r: -abs(r["diff"]))
    said = [r for r in rows if r["said"]]
    margin = (section.get("settings") or {}).get("min_points", 0)
    lines += [r["words"] for r in said] or [
        "On paired random conditions no cell of any factor (fifth of its range, or band of distance from its reference) "
        f"separates how much the checkpoints lose there by more than {margin:g} points (Holm over the cells)."]
    for check in section.get("recipe_checks", []):
        lines.append(("Over the recipes' files: " + check["words"]) if check.get("words") else
                     f"{check['a']} vs {check['b']}: the said cell was not checked, the held-out split has no "
                     "instances left beyond those that proposed it (use fewer --where-instances).")
    files_findings = [r for r in said if r.get("design") != "recipes"] + [
        p for p in section["pairs"] if p["design"] == "files" and (p["confirmation"] or {}).get("weaker")]
    if files_findings:
        lines.append(SEED_CAVEAT)
    return lines


#: said under a finding between single files: it is about the two files compared, not yet about their recipes
SEED_CAVEAT = ("These differences are between the checkpoint files compared. Two training seeds of one recipe can "
               "differ as much in a cell of a factor; to attribute a finding to what distinguishes the recipes, give "
               "several files (training seeds) of each recipe one name and compare them as recipes.")


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
    lines += ["", "| checkpoint | over all random conditions | " + " | ".join(f"fifth {k + 1}" for k in range(5))
              + " | near the reference | middle | far (both ends) |", "|---|---|" + "---|" * 8]
    for factor in sens["factors"]:
        for name, overall in sens["overall"].items():
            mine = [r for r in sens["checkpoints"] if r["factor"] == factor["name"] and r["target"] == name]
            fifths = [f"{c['low']:.3g}-{c['high']:.3g}: {c['mean']:.2f}" for c in mine if c.get("kind", "fifth") == "fifth"]
            bands = [f"{c['low']:.3g}-{c['high']:.3g} from {c['reference']:g}: {c['mean']:.2f}"
                     for c in mine if c.get("kind") == "band"] or ["–"] * 3
            lines.append(f"| {factor['name']}: {name} | {overall['mean']:.2f} | " + " | ".join(fifths + bands) + " |")
    return lines + ["", f"![sensitivity]({Path(section['plot']).name})"]


def where_html(section: dict[str, Any] | None) -> str:
    """A self-contained HTML fragment of the section: its sentences, then the figure embedded as a PNG
    data URI (no file or network needed to show it); empty for None."""
    if not section:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in section["sentences"])
    plot = Path(section["plot"])
    image = (f"<img src=\"data:image/png;base64,{base64.b64encode(plot.read_bytes()).decode()}\" "
             "alt=\"accuracy per fifth of each factor, per checkpoint\" style=\"max-width:100%\">"
             if plot.is_file() else "")
    return (f"<section class=\"where\"><h3>Where one checkpoint is weaker than the other</h3><ul>{items}</ul>"
            f"{image}</section>")
