"""The where section for checkpoints replicated over training seeds: each seed's own files, then what
every seed agrees on.

A label with one checkpoint file per seed (``plain`` trained and examined with seeds 0, 1, 2; see
:mod:`advaudit.compare.labels`) is a recipe. Its where section cannot score one seed's file and
call it the recipe: :func:`where_over_seeds` runs :func:`advaudit.compare.where_section.where_section`
on each seed's runs (that seed's files; held-out instances and conditions drawn with that seed, so
the seeds are independent replications), keeps each seed's
section in ``per_seed``, and says first the fifths said in **every** seed, in the same direction,
for the same pair: a finding about the recipes rather than about two files. The figure and the
tables are the first seed's.

A fifth said in every seed is then **confirmed** per seed (:func:`confirm_agreed`): for each pair,
the agreed fifth with the largest difference becomes a region, checked as
:mod:`advaudit.compare.confirm` checks a region proposed from worst cases, on held-out instances
disjoint from those whose sensitivity proposed it (the next ``instances`` of the same draw) under
new random conditions in the fifth. It is confirmed when every seed names the same checkpoint weaker
there (each seed's p Holm-corrected over that seed's checks): requiring all seeds needs no further
correction. One file per label gets no such check: a fifth said by one pair of files describes those
files, and a control pair of one recipe's seeds would confirm it as readily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advaudit.compare.confirm import Settings, choose_instances, confirm, decide, verdict_words
from advaudit.compare.design import Group
from advaudit.compare.labels import checkpoint_source
from advaudit.compare.where import region_words
from advaudit.compare.where_section import SEED_CAVEAT, check_setup, where_section


def files_per_seed(group: Group) -> bool:
    """Whether some label of ``group`` is a different checkpoint file at different seeds."""
    return any(len({checkpoint_source(r) for r in group.runs if r.target == t}) > 1 for t in group.targets)


def where_over_seeds(group: Group, names: dict[str, str], out: Path, slug: str,
                     settings: Settings = Settings()) -> dict[str, Any] | None:
    """The where section of ``group``: per seed where its labels are recipes (module docstring)."""
    seeds = group.common_seeds()
    if not files_per_seed(group) or len(seeds) < 2:
        return where_section(group, names, out, slug, settings)
    per_seed = {}
    for seed in seeds:
        runs = [r for r in group.runs if r.seed == seed]
        per_seed[seed] = where_section(Group(group.audit, group.design, runs), names, out, f"{slug}_seed{seed}",
                                       settings)
    first = per_seed[seeds[0]]
    if first is None:
        return None
    section = dict(first)
    section["per_seed"] = {str(seed): s for seed, s in per_seed.items()}
    section["recipe_checks"] = confirm_agreed(group, names, per_seed, settings)
    section["sentences"] = seed_sentences(per_seed, section["recipe_checks"])
    return section


def strongest_agreed(per_seed: dict[int, dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per pair, the fifth said in every seed with the largest smallest-over-seeds difference."""
    best: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
    for rows in agreed_rows(per_seed):
        pair, strength = (rows[0]["a"], rows[0]["b"]), min(abs(r["diff"]) for r in rows)
        if pair not in best or strength > best[pair][0]:
            best[pair] = (strength, rows[0])
    return {pair: row for pair, (_, row) in best.items()}


def confirm_agreed(group: Group, names: dict[str, str], per_seed: dict[int, dict[str, Any]],
                   settings: Settings) -> list[dict[str, Any]]:
    """Each pair's strongest agreed fifth checked in every seed (module docstring): one record per pair,
    ``{a, b, factor, unit, region, checks: {seed: check}, weaker}`` (``weaker``: the checkpoint every
    seed's check names, else None)."""
    proposals = strongest_agreed(per_seed)
    if not proposals:
        return []
    checks: dict[tuple[str, str], dict[str, dict[str, Any]]] = {pair: {} for pair in proposals}
    for seed in per_seed:
        runs = Group(group.audit, group.design, [r for r in group.runs if r.seed == seed])
        world, targets, split, calibrated = check_setup(runs, names)
        z = choose_instances(world, split, settings.instances, seed, skip=settings.instances)
        if len(z) < 2:
            continue
        seed_checks = []
        for pair, row in proposals.items():
            check = confirm(world, z, targets, pair, row["factor"], (row["low"], row["high"]), seed + 2,
                            settings, calibrated) | {"split": split}
            checks[pair][str(seed)] = check
            seed_checks.append(check)
        decide(seed_checks, settings.alpha)
    records = []
    for pair, row in proposals.items():
        named = {c["weaker"] for c in checks[pair].values()}
        weaker = named.pop() if len(named) == 1 and len(checks[pair]) == len(per_seed) else None
        records.append({"a": pair[0], "b": pair[1], "factor": row["factor"], "unit": row.get("unit", ""),
                        "region": [float(row["low"]), float(row["high"])], "checks": checks[pair],
                        "weaker": weaker})
    return records


def recipe_check_words(record: dict[str, Any], k: int) -> str:
    """The sentence for one record of :func:`confirm_agreed`."""
    where = region_words(record["factor"], (record["region"][0], record["region"][1]), record.get("unit", ""))
    head = (f"Checked in each training seed on held-out instances other than those that proposed it, under new "
            f"random conditions with {where}")
    if not record["checks"]:
        return head + (": not checked, the held-out split has no instances left beyond those that proposed it "
                       "(use fewer --where-instances).")
    per_seed = "; ".join(f"seed {seed}: {verdict_words(check)}" for seed, check in record["checks"].items())
    if record["weaker"] is None:
        said = sum(c["weaker"] is not None for c in record["checks"].values())
        return head + f": not confirmed in every seed ({said} of {k} name a weaker checkpoint; {per_seed})."
    return head + (f": {record['weaker']} is the weaker checkpoint there in every training seed "
                   f"({k} of {k}; {per_seed}).")


def agreed_rows(per_seed: dict[int, dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Per-fifth rows said in every seed for the same pair, factor, fifth and loser: one list per cell."""
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for section in per_seed.values():
        for row in section["sensitivity"]["pairs"]:
            if row["said"]:
                loser = row["a"] if row["diff"] < 0 else row["b"]
                cells.setdefault((row["a"], row["b"], row["factor"], row["fifth"], loser), []).append(row)
    return [rows for rows in cells.values() if len(rows) == len(per_seed)]


def seed_sentences(per_seed: dict[int, dict[str, Any]], recipe_checks: list[dict[str, Any]] = ()) -> list[str]:
    """What every seed agrees on and its confirmation, then each seed's own sentences (prefixed with its seed)."""
    k = len(per_seed)
    lines = [recipe_check_words(record, k) for record in recipe_checks]
    for rows in agreed_rows(per_seed):
        row = rows[0]
        loser, winner = (row["a"], row["b"]) if row["diff"] < 0 else (row["b"], row["a"])
        points = [abs(100 * r["diff"]) for r in rows]
        where = region_words(row["factor"], (row["low"], row["high"]), row.get("unit", ""))
        span = f"{min(points):.0f}" if f"{min(points):.0f}" == f"{max(points):.0f}" else \
            f"{min(points):.0f}-{max(points):.0f}"
        lines.append(f"In every training seed ({k} of {k}), at {where} {loser} is the less accurate; measured "
                     f"from each one's accuracy over all random conditions, {loser} does {span} points worse "
                     f"there than {winner} (checkpoint x fifth difference per seed: "
                     + ", ".join(f"{abs(100 * r['diff']):.0f} [{100 * min(abs(r['lo']), abs(r['hi'])):.0f}, "
                                 f"{100 * max(abs(r['lo']), abs(r['hi'])):.0f}]" for r in rows) + " points).")
    if not lines:
        lines.append(f"No fifth of any factor is said in all {k} training seeds: nothing here is about the recipes "
                     "rather than about single files.")
    for seed, section in per_seed.items():
        lines += [f"Training seed {seed}: {s}" for s in section["sentences"] if s != SEED_CAVEAT]
    return lines
