"""Checkpoint labels that name one checkpoint each.

A run's checkpoint is labelled by its target block's ``name`` (or the checkpoint's path). Different
checkpoint files that carry the same name are a **recipe**: a recipe trained with several seeds, each
imported by a block that says ``name: plain``, examined on the same instances (one examination seed, the
recommended design) or each at a seed of its own. The training seed is a property of the file: the
comparison treats every file as one replication of its recipe (:mod:`advaudit.compare.differences`) and says so
in a note. To compare such files one by one, give each its own name.

Runs whose target blocks carry no name are labelled by their files, one label per file. To compare
such runs as recipes over seeds, ``--recipe NAME=PATTERN`` names every run whose checkpoint path
matches the shell pattern (:func:`name_recipes`).
"""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import Any, Iterable, Protocol

from advaudit.errors import AdvauditError, require


class _Labelled(Protocol):
    target: str | None
    seed: int | None
    config: dict[str, Any]
    result: dict[str, Any]
    label_note: str | None
    file_label: str | None


def checkpoint_source(record: _Labelled) -> str:
    """What identifies the checkpoint a run examined: its file, else the whole target block."""
    target = record.config.get("target")
    if isinstance(target, dict):
        if target.get("path"):
            return str(target["path"])
        return json.dumps({k: v for k, v in target.items() if k != "name"}, sort_keys=True, default=str)
    return str(target if target is not None else record.result.get("checkpoint") or record.target)


def distinguishing_parts(sources: list[str]) -> list[str]:
    """For each source path, the path components that differ from the others.

    ``["/a/plain_s0/weights.pt", "/a/plain_s1/weights.pt"]`` -> ``["plain_s0", "plain_s1"]``:
    components shared by all at the start and at the end are dropped.
    """
    parts = [PurePath(s).parts for s in sources]
    shortest = min(len(p) for p in parts)
    head = 0
    while head < shortest - 1 and len({p[head] for p in parts}) == 1:
        head += 1
    tail = 0
    while tail < shortest - head - 1 and len({p[len(p) - 1 - tail] for p in parts}) == 1:
        tail += 1
    return ["/".join(p[head:len(p) - tail]) for p in parts]


def distinct_labels(records: Iterable[_Labelled]) -> None:
    """Note the labels that name several checkpoint files (module docstring), in place: each is a recipe whose
    files are its replications (training seeds), examined at one seed or at several."""
    by_label: dict[str, list[_Labelled]] = {}
    for record in records:
        if record.target is not None:
            by_label.setdefault(str(record.target), []).append(record)
    for label, members in by_label.items():
        sources = sorted({checkpoint_source(r) for r in members})
        if len(sources) < 2:
            continue
        parts = ", ".join(distinguishing_parts(sources)[:6]) + (", ..." if len(sources) > 6 else "")
        note = (f"{label!r} is {len(sources)} checkpoint files ({parts}): compared as one recipe, each file a "
                "replication of it (a training seed); give each file its own target.name to compare the files instead")
        for record in members:
            record.label_note = note


def parse_recipes(specs: Iterable[str]) -> dict[str, str]:
    """``["control=*/control/*", ...]`` -> ``{"control": "*/control/*", ...}``; bad input raises AdvauditError."""
    recipes: dict[str, str] = {}
    for spec in specs:
        name, sep, pattern = spec.partition("=")
        require(bool(sep and name.strip() and pattern.strip()),
                f"--recipe {spec!r} is not NAME=PATTERN; e.g. --recipe control='*/control/*' (a shell pattern "
                "matched against each run's checkpoint path)")
        require(name.strip() not in recipes, f"--recipe {name.strip()!r} is given twice; give each recipe one pattern")
        recipes[name.strip()] = pattern.strip()
    return recipes


def name_recipes(records: Iterable[_Labelled], recipes: dict[str, str]) -> None:
    """Label every run whose checkpoint path matches a recipe's pattern with that recipe's name, in place.

    ``{"control": "*/control/*"}`` labels ``s0/control/target.pt`` and ``s1/control/target.pt``
    ``control``; with one file per seed they are then one recipe over its seeds. A pattern that
    matches no run, or a run that two patterns match, raises AdvauditError (a typo must not leave a
    recipe out of the comparison unnoticed).
    """
    records = list(records)
    matched: dict[str, int] = {name: 0 for name in recipes}
    for record in records:
        source = checkpoint_source(record)
        names = [name for name, pattern in recipes.items() if fnmatchcase(source, pattern)]
        if len(names) > 1:
            raise AdvauditError(f"{source} matches the patterns of --recipe {' and '.join(names)}; make the "
                                "patterns tell the recipes apart")
        if names:
            record.file_label, record.target = record.target, names[0]
            matched[names[0]] += 1
    unmatched = [f"{name}={recipes[name]}" for name, count in matched.items() if count == 0]
    require(not unmatched, f"--recipe {', '.join(unmatched)} matches no run's checkpoint path; patterns are matched "
            f"against paths such as {next((checkpoint_source(r) for r in records), '?')!r} (use * for any part)")
