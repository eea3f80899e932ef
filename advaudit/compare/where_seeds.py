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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advaudit.compare.confirm import Settings
from advaudit.compare.design import Group
from advaudit.compare.labels import checkpoint_source
from advaudit.compare.where import region_words
from advaudit.compare.where_section import SEED_CAVEAT, where_section


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
    section["sentences"] = seed_sentences(per_seed)
    return section


def agreed_rows(per_seed: dict[int, dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Per-fifth rows said in every seed for the same pair, factor, fifth and loser: one list per cell."""
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for section in per_seed.values():
        for row in section["sensitivity"]["pairs"]:
            if row["said"]:
                loser = row["a"] if row["diff"] < 0 else row["b"]
                cells.setdefault((row["a"], row["b"], row["factor"], row["fifth"], loser), []).append(row)
    return [rows for rows in cells.values() if len(rows) == len(per_seed)]


def seed_sentences(per_seed: dict[int, dict[str, Any]]) -> list[str]:
    """What every seed agrees on, then each seed's own sentences (prefixed with its seed)."""
    k = len(per_seed)
    lines = []
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
