"""The where section's rule for two recipes, on pretend recipes: one recipe's files split at random, at any size.

The recipe-level control of ``recipe_splits.py`` runs a whole comparison per split, at the comparison's default of
60 held-out instances. This checks the where section's cells alone, at the size a user asks for
(``--where-instances 300``), for many splits at the cost of one: every file of the recipe scores the same held-out
renders once (the where section's draw: its instances and its ``seed + 1`` conditions), then each split's two
pretend recipes go through :func:`advaudit.compare.where.sensitivity_recipes.recipe_interaction`, the function the
comparison calls. Any said cell is a false positive: the two "recipes" are one. The splits are drawn as
``recipe_splits.py`` draws them (same ``--seed``: the same 20 splits).

    PYTHONPATH=. .venv/bin/python benchmarks/compare/recipe_where_control.py outputs/recipes/examine_shift_rl \
        outputs/recipes/examine_control_rl --label plain --instances 300 --out outputs/recipes/where_control_300.json
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from advaudit.compare.design import group_runs
from advaudit.compare.labels import checkpoint_source
from advaudit.compare.records import discover_runs
from advaudit.compare.where.confirm import Settings, choose_instances, score, uniform_conditions
from advaudit.compare.where.sensitivity import cell_accuracies
from advaudit.compare.where.sensitivity_recipes import recipe_interaction
from advaudit.compare.where.units import checks_of, units_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", help="the examined runs of one recipe's files")
    parser.add_argument("--out", type=Path, required=True, help="a JSON file")
    parser.add_argument("--label", default=None, help="only the runs of this checkpoint label (the recipe's name)")
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--size", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    runs = [r for r in discover_runs(args.roots) if r.ok and (args.label is None or r.target == args.label)]
    for run in runs:                                        # every file its own checkpoint: one render serves all
        run.target, run.label_note = checkpoint_source(run), None
    [group] = group_runs(runs)
    setup = checks_of(group)
    units = units_of(group, {t: t for t in group.targets})
    settings = Settings(instances=args.instances)
    z = choose_instances(setup.world, setup.split, settings.instances, setup.seed)
    s = uniform_conditions(list(setup.world.factors), len(z), settings.random_conditions, setup.seed + 1)
    scores = score(setup.world, z, s, units.load(setup.world), setup.calibrated, settings.batch)
    correct = {unit: c for unit, (_, c) in scores.items()}                     # [n, m] per file
    cells, accuracy = cell_accuracies(setup.world, s, correct)
    overall = {unit: c.mean(1) for unit, c in correct.items()}
    files = sorted(group.targets)
    draw, rows = random.Random(args.seed), []
    for k in range(args.splits):
        chosen = draw.sample(files, 2 * args.size)
        sides = {"a": tuple(chosen[:args.size]), "b": tuple(chosen[args.size:])}
        tested = recipe_interaction("a", "b", sides, cells, accuracy, overall, settings.alpha, settings.min_points)
        said = [r["place"] for r in tested if r["said"]]
        closest = max(tested, key=lambda r: (r["pairs_said"], -r["p_holm_pairs"]))
        rows.append({"split": k, "a": [units.short[f] for f in sides["a"]], "b": [units.short[f] for f in sides["b"]],
                     "said": said, "most_pairs_said": closest["pairs_said"], "at": closest["place"]})
        print(f"split {k:2d}: said {said or '-'}; most pairs of files saying one cell: {closest['pairs_said']} of "
              f"{closest['pairs']} ({closest['place']})", flush=True)
    summary = {"files": len(files), "instances": len(z), "conditions_per_instance": settings.random_conditions,
               "cells": len(tested), "splits": len(rows), "with_cell_said": sum(bool(r["said"]) for r in rows),
               "seconds": round(time.perf_counter() - started, 1), "rows": rows}
    args.out.write_text(json.dumps(summary, indent=1))
    print({k: v for k, v in summary.items() if k != "rows"})


if __name__ == "__main__":
    main()
