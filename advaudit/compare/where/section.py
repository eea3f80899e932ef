"""The comparison's ``where`` section for one worst-case group: tested, confirmed, and per cell of each factor.

For every pair of checkpoints (names as the report shows them; a checkpoint is one file or a recipe of several,
:mod:`advaudit.compare.where.units`):

1. **tested** between the checkpoints on their worst cases (:mod:`advaudit.compare.where.regions`; a recipe's files
   pooled): one two-sample test per searched factor, Holm over the factors, a region proposed where the
   corrected p is below ``alpha``;
2. **confirmed** on held-out instances under new random conditions in that region
   (:mod:`advaudit.compare.where.confirm`; two recipes over their files), Holm over the group's confirmations;
3. **per cell**: each checkpoint's accuracy per fifth of every factor and per band of distance from its
   reference (:mod:`advaudit.compare.where.cells`) on paired random conditions, and the checkpoint x cell difference
   (:mod:`advaudit.compare.where.sensitivity`; two recipes over their files, every pair of files agreeing:
   :mod:`advaudit.compare.where.sensitivity_recipes`), with a PNG;
4. for two recipes, the said cell with the largest difference **confirmed** on held-out instances other than
   those that proposed it (the next ones of the same draw). Between single files no such check runs: a control
   pair (two seeds of one recipe) would confirm its own difference as readily, so their findings are said to be
   about the files.

Every file of every checkpoint scores the same held-out renders. The checks are seeded with the group's first
seed; the held-out instances are the same for 2 and 3 (their conditions differ). The sentences are written by
:mod:`advaudit.compare.where.words`; :mod:`advaudit.compare.render` lays the section out as Markdown and HTML.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.compare.design import Group
from advaudit.compare.where.breakdowns import pooled_instances, searched_factors, worst_conditions
from advaudit.compare.where.confirm import Settings, choose_instances, confirm, decide
from advaudit.compare.where.plot import sensitivity_plot
from advaudit.compare.where.regions import Axis, between_checkpoints, strongest
from advaudit.compare.where.sensitivity import measure
from advaudit.compare.where.units import checks_of, units_of
from advaudit.compare.where.words import sentences, test_words
from advaudit.core.statistics import holm

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
                                 "tested_words": test_words(best, settings.alpha), "confirmation": None})
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
