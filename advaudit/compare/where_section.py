"""The comparison's ``where`` section for one worst-case group: tested, confirmed, and per fifth.

For every pair of checkpoints (names as the report shows them):

1. **tested** between the checkpoints on their worst cases (:mod:`advaudit.compare.where`): one
   two-sample test per searched factor, Holm over the factors, a region proposed where the
   corrected p is below ``alpha``;
2. **confirmed** on held-out instances under new random conditions in that region
   (:mod:`advaudit.compare.confirm`), Holm over the group's confirmations;
3. **per fifth**: each checkpoint's accuracy per fifth of every factor on paired random conditions,
   and the checkpoint x fifth difference (:mod:`advaudit.compare.sensitivity`), with a PNG.

Targets are loaded by :mod:`advaudit.compare.replay`'s loader (the one replay uses). The checks
are seeded with the group's first seed; the held-out instances are the same for 2 and 3 (their
conditions differ). :func:`where_markdown` and :func:`where_html` turn the section into report text.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.compare import replay as replay_module
from advaudit.compare.breakdowns import pooled_instances, searched_factors, worst_conditions
from advaudit.compare.confirm import Settings, choose_instances, confirm, decide, held_out_split
from advaudit.compare.design import Group
from advaudit.compare.sensitivity import measure
from advaudit.compare.where import Axis, between_checkpoints, holm, strongest, test_words
from advaudit.compare.where_plots import sensitivity_plot
from advaudit.worlds import build_world

_MEASURED: dict[str, dict[str, Any]] = {}   # sensitivity of the last (world, targets, instances, seed): groups share it


def worst_values(group: Group, names: dict[str, str], seeds: list[int]) -> dict[str, dict[str, np.ndarray]]:
    """``{factor: {name: worst-case values [n]}}`` pooled over ``seeds`` (one per instance and seed)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for target in group.targets:
        frame = pooled_instances(group, target, seeds)
        if frame is None or "worst_s" not in frame:
            continue
        for factor, column in worst_conditions(frame).items():
            out.setdefault(str(factor), {})[names[target]] = column.astype(float).dropna().to_numpy()
    return out


def load_targets(group: Group, names: dict[str, str], world: Any) -> dict[str, Any]:
    """``{name: loaded target}`` through replay's loader, each in ``world``'s class order (paired by name)."""
    return {names[t]: replay_module.load_world_target(replay_module.target_value(group, t), world)
            for t in group.targets}


def check_setup(group: Group, names: dict[str, str]) -> tuple[Any, dict[str, Any], str, bool]:
    """What the checks of ``group`` render with: its world, ``{name: target}``, the held-out split and
    whether the examination scored calibrated probabilities."""
    config = group.runs[0].config
    world = build_world(config["world"])
    targets = load_targets(group, names, world)          # a checkpoint that cannot be loaded stops here
    audit = config.get("audit") or {}
    return world, targets, held_out_split(str(audit.get("selection_split", "val"))), bool(audit.get("calibrated", False))


def where_section(group: Group, names: dict[str, str], out: Path, slug: str,
                  settings: Settings = Settings()) -> dict[str, Any] | None:
    """The section (module docstring) for a worst-case group of two or more checkpoints, else None."""
    if group.audit != "worst_case" or len(group.targets) < 2:
        return None
    config = group.runs[0].config
    world, targets, split, calibrated = check_setup(group, names)
    seeds = group.common_seeds()
    seed = int(seeds[0]) if seeds else 0
    axes = [Axis.of(f) for f in world.factors if f.name in searched_factors(list(world.factors), group.design)]
    values = worst_values(group, names, seeds)
    section: dict[str, Any] = {"alpha": settings.alpha, "seed": seed, "settings": asdict(settings), "pairs": []}
    for a, b in itertools.combinations([names[t] for t in group.targets], 2):
        tests = holm(between_checkpoints(values, axes, (a, b), seed=seed))
        best = strongest(tests)
        section["pairs"].append({"a": a, "b": b, "tests": [t.as_dict() for t in tests],
                                 "proposed": best.as_dict() if best and best.proposed(settings.alpha) else None,
                                 "tested_words": test_words(best, settings.alpha) if best else
                                 "No worst-case conditions to compare between them.", "confirmation": None})
    z = choose_instances(world, split, settings.instances, seed)
    checks = []
    for pair in section["pairs"]:
        if pair["proposed"]:
            check = confirm(world, z, targets, (pair["a"], pair["b"]), pair["proposed"]["factor"],
                            pair["proposed"]["region"], seed, settings, calibrated)
            pair["confirmation"] = check | {"split": split}
            checks.append(pair["confirmation"])
    decide(checks, settings.alpha)
    key = json.dumps([config["world"], calibrated, sorted(targets), [str(replay_module.target_value(group, t))
                                                         for t in group.targets], split, seed, asdict(settings)],
                     sort_keys=True, default=str)
    if key not in _MEASURED:
        _MEASURED.clear()
        _MEASURED[key] = measure(world, z, targets, seed + 1, settings, calibrated)
    section["sensitivity"] = _MEASURED[key] | {"split": split}
    section["plot"] = str(sensitivity_plot(section["sensitivity"], out / f"sensitivity_{slug}.png"))
    section["sentences"] = sentences(section)
    return section


def sentences(section: dict[str, Any]) -> list[str]:
    """What the section says, in order: per pair tested, confirmed, then the per-fifth findings."""
    lines = []
    for pair in section["pairs"]:
        lines.append(f"{pair['a']} vs {pair['b']}: {pair['tested_words']}")
        if pair["confirmation"]:
            lines.append(pair["confirmation"]["words"])
    rows = sorted(section["sensitivity"]["pairs"], key=lambda r: -abs(r["diff"]))
    said = [r["words"] for r in rows if r["said"]]
    margin = (section.get("settings") or {}).get("min_points", 0)
    lines += said or ["On paired random conditions no fifth of any factor separates how much the checkpoints lose "
                      f"there by more than {margin:g} points (Holm over factors x fifths)."]
    if said or any(p["confirmation"] and p["confirmation"].get("weaker") for p in section["pairs"]):
        lines.append(SEED_CAVEAT)
    return lines


#: said under every finding: it is about the two files compared, not yet about what distinguishes their recipes
SEED_CAVEAT = ("These differences are between the checkpoints compared. Two training seeds of one recipe can differ "
               "as much in a fifth of a factor; to attribute a finding to what distinguishes the recipes, compare "
               "checkpoints of several training seeds of each and look for the same fifth in every pair.")


def where_markdown(section: dict[str, Any] | None) -> list[str]:
    """Markdown lines of the section (nothing for None)."""
    if not section:
        return []
    sens = section["sensitivity"]
    lines = ["", "### Where one checkpoint is weaker than the other", "",
             f"Worst cases tested between the checkpoints per factor; a proposed region is confirmed on "
             f"{len(sens['instances'])} held-out {sens['split']} instances under new random conditions (seed "
             f"{section['seed']}); accuracy per fifth of each factor on {sens['conditions_per_instance']} paired "
             "random conditions per instance.", ""]
    lines += [f"- {s}" for s in section["sentences"]]
    lines += ["", "| checkpoint | over all random conditions | " + " | ".join(f"fifth {k + 1}" for k in range(5)) + " |",
              "|---|---|" + "---|" * 5]
    for factor in sens["factors"]:
        for name, overall in sens["overall"].items():
            cells = [r for r in sens["checkpoints"] if r["factor"] == factor["name"] and r["target"] == name]
            lines.append(f"| {factor['name']}: {name} | {overall['mean']:.2f} | "
                         + " | ".join(f"{c['low']:.3g}-{c['high']:.3g}: {c['mean']:.2f}" for c in cells) + " |")
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
