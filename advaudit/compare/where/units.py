"""The checkpoint files a group compares, the units every held-out render is scored by.

A label (what the report calls a checkpoint) is one file, or a recipe of several files (training seeds).
The where and why sections render held-out conditions once and score them by every file, so a recipe's
files are compared on the same images as the other recipe's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advaudit.compare.design import Group
from advaudit.compare.labels import distinguishing_parts
from advaudit.compare.where import replay as replay_module
from advaudit.compare.where.confirm import held_out_split
from advaudit.worlds import build_world


@dataclass
class Units:
    """``sides``: ``{name: (unit, ...)}`` the files of each checkpoint label under its report name; ``values``:
    ``{unit: what a loader takes}``; ``short``: ``{unit: a short label}`` (the part of the path that tells a
    recipe's files apart, or the label of a single file)."""

    sides: dict[str, tuple[str, ...]]
    values: dict[str, Any]
    short: dict[str, str]

    @property
    def recipes(self) -> bool:
        """Whether some label has two or more files."""
        return any(len(u) > 1 for u in self.sides.values())

    def both_recipes(self, a: str, b: str) -> bool:
        return min(len(self.sides[a]), len(self.sides[b])) >= 2

    def load(self, world: Any) -> dict[str, Any]:
        """``{unit: loaded target}`` in ``world``'s class order (replay's loader)."""
        return {unit: replay_module.load_world_target(value, world) for unit, value in self.values.items()}


def run_target(run: Any) -> Any:
    """What one run examined, as a loader takes it: its target block, else its checkpoint's path or label."""
    value = run.config.get("target")
    if isinstance(value, (dict, str)):
        return value
    return run.file_label or run.target


def units_of(group: Group, names: dict[str, str]) -> Units:
    """The files of every label of ``group`` (module docstring)."""
    sides, values, short = {}, {}, {}
    for label in group.targets:
        files = group.files(label)
        sides[names[label]] = tuple(files)
        parts = distinguishing_parts(files) if len(files) > 1 else [names[label]]
        for source, part in zip(files, parts):
            values[source] = run_target(group.file_runs(label, source)[0])
            short[source] = part
    return Units(sides, values, short)


@dataclass
class Checks:
    """What the where and why sections of a worst-case group render with: the run config, its world, the held-out
    split (the one the examination did not use), whether the examination scored calibrated probabilities, the
    group's first seed (it draws the held-out instances and conditions) and every seed of the group."""

    config: dict[str, Any]
    world: Any
    split: str
    calibrated: bool
    seed: int
    seeds: list[int]


def checks_of(group: Group) -> Checks | None:
    """The :class:`Checks` of a worst-case group of two or more checkpoints, else None."""
    if not group.searches_world or len(group.targets) < 2:
        return None
    config = group.runs[0].config
    audit = config.get("audit") or {}
    seeds = sorted({int(r.seed) for r in group.runs if r.seed is not None})
    return Checks(config, build_world(config["world"]), held_out_split(str(audit.get("selection_split", "val"))),
                  bool(audit.get("calibrated", False)), seeds[0] if seeds else 0, seeds)
