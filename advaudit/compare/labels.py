"""Checkpoint labels that name one checkpoint each.

A run's checkpoint is labelled by its target block's ``name`` (or the checkpoint's path). Two
different checkpoints can carry the same name: a recipe trained with several seeds, each imported
by a block that says ``name: plain``. Labelled alike they would be taken for one checkpoint run
twice and never compared, so runs whose checkpoints share a label and a seed but come from
different files get the label plus the part of the path that tells them apart (``plain (plain_s0)``,
``plain (plain_s1)``), and the comparison says so in a note. One file per seed under one label is a
recipe replicated over seeds and keeps its label.
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any, Iterable, Protocol


class _Labelled(Protocol):
    target: str | None
    seed: int | None
    config: dict[str, Any]
    result: dict[str, Any]
    label_note: str | None


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
    """Relabel runs whose different checkpoints share a label and a seed (module docstring), in place.

    Different files under one label but each at its own seed (``plain`` trained and examined with seed
    0, 1, 2) are a recipe replicated over seeds: they keep the label, compared over their seeds, and
    get a note saying so.
    """
    by_label: dict[str, list[_Labelled]] = {}
    for record in records:
        if record.target is not None:
            by_label.setdefault(str(record.target), []).append(record)
    for label, members in by_label.items():
        sources = sorted({checkpoint_source(r) for r in members})
        if len(sources) < 2:
            continue
        per_seed: dict[Any, set[str]] = {}
        for record in members:
            per_seed.setdefault(record.seed, set()).add(checkpoint_source(record))
        if all(len(files) == 1 for files in per_seed.values()):
            note = (f"{label!r} is {len(sources)} checkpoint files, one per seed: compared as one recipe over its "
                    "seeds (give each file its own target.name to compare the files instead)")
            for record in members:
                record.label_note = note
            continue
        suffix = dict(zip(sources, distinguishing_parts(sources)))
        note = (f"{len(sources)} different checkpoints are all named {label!r}; they are labelled "
                f"{', '.join(repr(f'{label} ({suffix[s]})') for s in sources)} by their paths "
                "(give each its own target.name to choose the labels)")
        for record in members:
            record.target = f"{label} ({suffix[checkpoint_source(record)]})"
            record.label_note = note
