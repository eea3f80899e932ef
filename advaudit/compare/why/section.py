"""The comparison's why section for one worst-case group: every pair's gap attributed by intervention.

Held-out instances (the split the examination did not use, drawn with the group's seed) each get random
conditions uniform over S, rendered once as drawn and once per intervention, and every checkpoint file of the
group scores the same images (:mod:`advaudit.compare.why.measure`). Each pair of checkpoints (or of recipes, over
their files) gets its attribution (:mod:`advaudit.compare.why.attribution`). A recipe pair's said interventions
are then **confirmed** on as many *other* held-out instances (the next ones of the same draw) under new
conditions: Welch over files again, Holm over the pair's checks, the same sign and every pair of files agreeing.
Between single files the planned interventions are not confirmed: a control pair (two seeds of one recipe) would
confirm its own difference as readily, so such a finding is said to be about the files.

A cause may span factors of different groups. Each pair's single factors that explain most of its gap are then
combined (:func:`advaudit.compare.why.plan.leading`) and rendered on the same conditions; because the data chose
them, such a combination names the cause only once confirmed on the other held-out instances, for files and
recipes alike.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from advaudit.compare.design import Group
from advaudit.compare.where.confirm import Settings, choose_instances, uniform_conditions
from advaudit.compare.where.units import checks_of, units_of
from advaudit.compare.why.attribution import Sides, attribute, explained_by, headline_of
from advaudit.compare.why.measure import Measured, measure
from advaudit.compare.why.plan import Intervention, interventions, leading
from advaudit.compare.why.plot import attribution_plot
from advaudit.compare.why.words import nothing_words, sentences
from advaudit.core.statistics import holm
from advaudit.worlds.references import references_of


_MEASURED: dict[str, tuple[Measured, Any]] = {}   # the renders of the last (world, files, instances, seed, plan): groups share it


def user_groups(group: Group, settings: Settings) -> dict[str, list[str]]:
    """The user's groups: the runs' ``compare.factor_groups`` and the command line's (``settings.factor_groups``)."""
    declared = (group.runs[0].config.get("compare") or {}).get("factor_groups") or {}
    return {**{str(k): [str(f) for f in v] for k, v in dict(declared).items()},
            **{name: list(members) for name, members in settings.factor_groups}}


def why_section(group: Group, names: dict[str, str], out: Path, slug: str,
                settings: Settings = Settings()) -> dict[str, Any] | None:
    """The section (module docstring) for a worst-case group of two or more checkpoints, else None."""
    started = time.perf_counter()
    setup = checks_of(group)
    if setup is None:
        return None
    config, world, split, calibrated, seed = setup.config, setup.world, setup.split, setup.calibrated, setup.seed
    plan = interventions(world, user_groups(group, settings))
    units = units_of(group, names)
    sides = units.sides
    available = len(world.instances(split))
    n = max(1, min(settings.why_instances, available // 2))   # the other half: confirmations
    m = max(1, math.ceil(settings.why_renders / n))
    section: dict[str, Any] = {"split": split, "seed": seed, "instances": n, "conditions_per_instance": m,
                               "interventions": [k.as_dict() for k in plan], "files": units.short, "pairs": []}
    if not plan:
        section["sentences"] = [nothing_words({"rows": []}, 0)]
        return section
    loaded = units.load(world)
    z = choose_instances(world, split, n, seed)
    key = json.dumps([config["world"], calibrated, units.values, split, seed, n, m, [k.as_dict() for k in plan]],
                     sort_keys=True, default=str)
    if key not in _MEASURED:          # the RL and BO groups of the same checkpoints render the same conditions
        _MEASURED.clear()
        s = uniform_conditions(list(world.factors), len(z), m, seed + 3)
        _MEASURED[key] = (measure(world, z, s, plan, loaded, calibrated, settings.batch), s)
    measured, s = _MEASURED[key]
    pairs = [Sides(a, b, sides[a], sides[b]) for a, b in group.name_pairs(names)]
    first = [attribute(measured, plan, p, settings.alpha, settings.why_min_points) for p in pairs]
    combined = [leading(result["rows"], plan) for result in first]
    extra = list({k.name: k for ks in combined for k in ks}.values())
    if extra:                         # the pairs' leading combinations, on the same renders' conditions
        measure(world, z, s, extra, loaded, calibrated, settings.batch, into=measured)
    section["cost"] = {"renders": measured.renders, "seconds": 0.0}
    section["interventions"] += [k.as_dict() for k in extra]
    section["pairs"] = [attribute(measured, plan + ks, p, settings.alpha, settings.why_min_points) if ks else result
                        for p, ks, result in zip(pairs, combined, first)]   # with its combinations, Holm over all
    plan = plan + extra
    confirm(section, world, plan, loaded, split, seed, calibrated, settings)
    section["references"] = {k: v for k, v in references_of(world).items() if v is not None}
    section["sentences"] = sentences(section, world, plan)
    section["plot"] = str(attribution_plot(section, out / f"why_{slug}.png"))
    section["cost"]["seconds"] = round(time.perf_counter() - started, 2)   # loading, rendering, scoring, tests, figure
    return section


def to_confirm(result: dict[str, Any], row: dict[str, Any]) -> bool:
    """A said row is confirmed between recipes, and a said leading combination for files too (module docstring)."""
    return row["said"] and (result["design"] == "recipes" or row["kind"] == "leading")


def confirm(section: dict[str, Any], world: Any, plan: list[Intervention], loaded: dict[str, Any],
            split: str, seed: int, calibrated: bool, settings: Settings) -> None:
    """The said rows that need it (:func:`to_confirm`) measured again on the next held-out instances under new
    conditions (module docstring); each pair's headline then rests on confirmed rows where confirmation applies."""
    n, m = section["instances"], section["conditions_per_instance"]
    by_name = {k.name: k for k in plan}
    wanted = [(result, row) for result in section["pairs"] for row in result["rows"] if to_confirm(result, row)]
    for result in section["pairs"]:   # an unconfirmed leading combination never heads the section
        result["headline"] = _headline(result)
    if not wanted:
        return
    z = choose_instances(world, split, n, seed, skip=n)
    if len(z) < 2:
        for result, row in wanted:
            row["confirmation"] = None
        return
    needed = [by_name[name] for name in dict.fromkeys(row["name"] for _, row in wanted)]
    measured = measure(world, z, uniform_conditions(list(world.factors), len(z), m, seed + 4), needed, loaded,
                       calibrated, settings.batch)
    section["cost"]["renders"] += measured.renders
    for result in {id(r): r for r, _ in wanted}.values():
        sides = Sides(result["a"], result["b"], tuple(result["files"][result["a"]]), tuple(result["files"][result["b"]]))
        rows = [r for r in result["rows"] if to_confirm(result, r)]
        checks = [explained_by(measured, sides, by_name[row["name"]]) for row in rows]
        holm(checks)
        for row, check in zip(rows, checks):
            same = (check["diff"] > 0) == (row["diff"] > 0)
            agree = check.get("agree", 0) == check.get("pairs", 0)
            check.update(n_instances=len(z), relation=row["relation"], design=result["design"],
                         confirmed=bool(check["p_holm"] < settings.alpha and same and agree))
            row["confirmation"] = {k: v for k, v in check.items() if k != "gain"}
        result["headline"] = _headline(result)


def _headline(result: dict[str, Any]) -> str | None:
    """The pair's headline (:func:`headline_of`) over its said rows, those that need confirmation only when
    confirmed: between recipes every row, between files the leading combinations."""
    rows = [r for r in result["rows"]
            if not to_confirm(result, r) or (r.get("confirmation") or {}).get("confirmed")]
    headline = headline_of(rows, result["gap"]["diff"])
    return headline["name"] if headline else None
