"""Which runs can be compared with which: groups of runs that differ only in the checkpoint.

Two runs are comparable when their configs agree on everything that defines the examination
(the audit's settings and the sections its card names, :class:`advaudit.config.audit_card.AuditCard`:
the world and examiner of a worst-case audit, the search methods of an error search, the generator
of fault tests; an audit without a card: every section but bookkeeping) and differ only in ``target``
and ``seed``. The config compared is the one Hydra saved before resolving interpolations
(``<run>/.hydra/config.yaml``), so a value that follows the seed (``seed: ${seed}``) does not split
replications of one design; runs without it fall back to the resolved config in result.json.
Runs that differ in anything else are put in separate groups and the report names the keys that
differ, instead of mixing them in one table.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import pandas as pd

from advaudit.audits.cards import audit_card
from advaudit.compare.labels import checkpoint_source, distinguishing_parts
from advaudit.compare.records import RunRecord
from advaudit.config.audit_card import AuditCard
from advaudit.core.run_records import audit_design
from advaudit.core.naming import short_name, short_names
from advaudit.errors import AdvauditError

# top-level config keys that never define an examination
BOOKKEEPING = {"target", "seed", "paths", "hydra", "logger", "threads", "memory", "device", "tags", "task_name",
               "optimized_metric", "callbacks", "trainer", "debug", "status", "sweep", "compare"}


def design_of(config: dict[str, Any], audit: str | None = None) -> dict[str, Any]:
    """The part of a config that defines the examination (see module docstring)."""
    card = audit_card(audit)
    sections = ("audit", *card.sections) if card is not None and card.sections is not None else None
    design = {k: v for k, v in config.items() if (k in sections if sections else k not in BOOKKEEPING)}
    if isinstance(design.get("audit"), dict):
        design["audit"] = audit_design(design["audit"])
    return design


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists kept as values)."""
    if not isinstance(config, dict):
        return {prefix: config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        out.update(flatten(value, name) if isinstance(value, dict) and value else {name: value})
    return out


def method_of(config: dict[str, Any]) -> str | None:
    """The examiner / search method that distinguishes runs of the same audit (the config value at its card's
    ``method`` key), or None."""
    card = audit_card((config.get("audit") or {}).get("name"))
    return card.method_in(config) if card is not None else None


@dataclass
class Group:
    """Runs of one audit with one design: the checkpoints to compare, each over its seeds."""

    audit: str
    design: dict[str, Any]
    runs: list[RunRecord]
    notes: list[str] = field(default_factory=list)
    plan: list[tuple[str, str]] | None = None   # the pairs compared (labels); None: every pair (:func:`plan_pairs`)

    def pairs(self) -> list[tuple[str, str]]:
        """The pairs of checkpoint labels this group compares: its plan, else every pair."""
        return list(self.plan) if self.plan is not None else list(itertools.combinations(self.targets, 2))

    def name_pairs(self, names: dict[str, str]) -> list[tuple[str, str]]:
        """:meth:`pairs` under the names the report gives the checkpoints."""
        return [(names[a], names[b]) for a, b in self.pairs()]

    @property
    def method(self) -> str | None:
        return method_of(self.runs[0].config)

    @property
    def card(self) -> AuditCard | None:
        """What the group's audit declares about its runs (None: an audit advaudit does not hold)."""
        return audit_card(self.audit)

    @property
    def searches_world(self) -> bool:
        """Its audit searches a world's conditions (:attr:`advaudit.config.audit_card.AuditCard.searches_world`)."""
        return bool(self.card and self.card.searches_world)

    @property
    def label(self) -> str:
        return self.audit + (f" ({self.method})" if self.method else "")

    @property
    def targets(self) -> list[str]:
        return sorted({str(r.target) for r in self.runs})

    def seeds(self, target: str) -> list[int]:
        return sorted({r.seed for r in self.runs if str(r.target) == target and r.seed is not None})

    def common_seeds(self) -> list[int]:
        sets = [set(self.seeds(t)) for t in self.targets]
        return sorted(set.intersection(*sets)) if sets else []

    def run(self, target: str, seed: int) -> RunRecord | None:
        return next((r for r in self.runs if str(r.target) == target and r.seed == seed), None)

    def runs_at(self, target: str, seed: int) -> list[RunRecord]:
        """Every run of ``target`` at ``seed``: one per file (a recipe examined alike has several)."""
        return [r for r in self.runs if str(r.target) == target and r.seed == seed]

    def files(self, target: str) -> list[str]:
        """The checkpoint files (sources) examined under the label ``target``: one for a checkpoint, two or more
        for a recipe (each file a replication: a training seed)."""
        return sorted({checkpoint_source(r) for r in self.runs if str(r.target) == target})

    def file_runs(self, target: str, source: str) -> list[RunRecord]:
        """The runs of ``target`` that examined the file ``source`` (one per examination seed)."""
        return [r for r in self.runs if str(r.target) == target and checkpoint_source(r) == source]

    def is_recipe(self, target: str) -> bool:
        return len(self.files(target)) > 1


#: interpolations that follow what varies between the runs of one design: kept as written
RUN_VARYING = ("seed", "target")


def comparable_config(unresolved: Any, resolved: Any) -> Any:
    """The config a design is read from: as written, except that an interpolation which does not follow
    the seed or the target (``${report_budgets_within:${.budget}}``) is replaced by its resolved value, so a
    value written literally in one run and computed in another does not split them."""
    if isinstance(unresolved, dict):
        resolved = resolved if isinstance(resolved, dict) else {}
        return {k: comparable_config(v, resolved.get(k)) for k, v in unresolved.items()}
    if (isinstance(unresolved, str) and "${" in unresolved and resolved is not None
            and not any(word in unresolved for word in RUN_VARYING)):
        return resolved
    return unresolved


def _key(design: dict[str, Any]) -> str:
    return json.dumps(design, sort_keys=True, default=str)


def group_runs(records: Iterable[RunRecord]) -> list[Group]:
    """Successful runs grouped by (audit, design); each group's pairing problems noted."""
    buckets: dict[tuple[str, str], list[RunRecord]] = {}
    designs: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        if not record.ok or record.audit == "train":
            continue
        design = design_of(comparable_config(record.unresolved_config(), record.config), record.audit)
        key = (str(record.audit), _key(design))
        buckets.setdefault(key, []).append(record)
        designs[key] = design
    groups = [Group(audit, designs[(audit, k)], runs) for (audit, k), runs in buckets.items()]
    for group in groups:
        require_common_seed(group)
        group.notes.extend(pairing_notes(group))
    return sorted(groups, key=lambda g: (g.audit, g.method or "", _key(g.design)))


#: up to this many checkpoints a group compares every pair by default; more are each compared with a baseline
ALL_PAIRS_UP_TO = 3


def plan_pairs(group: Group, baseline: str | None = None, all_pairs: bool = False) -> None:
    """Set ``group.plan`` (in place): every pair with ``all_pairs`` or up to :data:`ALL_PAIRS_UP_TO` checkpoints,
    else every other checkpoint against ``baseline`` (a label or the name the report gives it; the first label by
    name when None, said in a note). K checkpoints then cost K - 1 pairs, and their tests K - 1 times the
    metrics in one Holm family, instead of K (K - 1) / 2."""
    targets = group.targets
    if all_pairs or len(targets) <= ALL_PAIRS_UP_TO and baseline is None:
        group.plan = None
        return
    names = short_names(targets)
    chosen = next((t for t in targets if baseline in (t, names[t])), None) if baseline else targets[0]
    if chosen is None:
        group.plan = None   # the baseline is not in this group (another group holds it): every pair here
        return
    if baseline is None:
        group.notes.append(f"{len(targets)} checkpoints: each is compared with {names[chosen]} (the first by name; "
                           "--baseline NAME picks another, --all-pairs compares every pair)")
    group.plan = [(chosen, t) for t in targets if t != chosen]


def require_common_seed(group: Group) -> None:
    """Refuse a group whose checkpoints share no seed: nothing in it could be paired (AdvauditError).

    The usual cause: one recipe over seeds whose target blocks carry no name, so every file is its own
    checkpoint, examined at one seed each.
    """
    seeds = {t: group.seeds(t) for t in group.targets}
    if len(seeds) < 2 or group.common_seeds() or not all(seeds.values()):
        return
    if all(group.is_recipe(t) for t in group.targets):
        group.notes.append("the recipes were examined at different seeds, so on different instances: they are "
                           "compared over their files, which holds, but examining every file with one seed pairs "
                           "their instances and has more power")
        return
    parts = dict(zip(seeds, distinguishing_parts(list(seeds))))
    shown = "; ".join(f"{parts[t]}: {s}" for t, s in list(seeds.items())[:4]) + ("; ..." if len(seeds) > 4 else "")
    raise AdvauditError(f"the {len(seeds)} checkpoints of {group.label} have no seed in common ({shown}), so they "
                        "cannot all be compared on the same seeds: to compare recipes over seeds give each recipe's runs one name "
                        "(target.name, or --recipe NAME=PATTERN such as --recipe control='*/control/*'), or "
                        "compare each seed's runs on their own")


def design_of_group(group: Group, seeds: list[int]) -> str:
    """In words: are the checkpoints compared on the same instances (paired) at every common seed?"""
    if len(group.targets) < 2:
        return "one checkpoint"
    selection = (group.design.get("audit") or {}).get("selection")
    shared = []
    for seed in seeds:
        sets = [group.run(t, seed).per_instance() for t in group.targets]  # type: ignore[union-attr]
        if any(s is None for s in sets):
            return "paired over seeds only (no per-instance records)"
        shared.append(len({tuple(sorted(s["instance"])) for s in sets}) == 1)
    chosen = f" (audit.selection={selection})" if selection else ""
    if shared and all(shared):
        return f"paired: every checkpoint was examined on the same instances at each seed{chosen}"
    return f"not fully paired: checkpoints were examined on different instances{chosen}; see the notes"


def pairing_notes(group: Group) -> list[str]:
    """What keeps a group from a fully paired design: differing seeds, instances, duplicates."""
    notes = list(dict.fromkeys(r.label_note for r in group.runs if r.label_note))
    seeds = {t: group.seeds(t) for t in group.targets}
    if len({tuple(s) for s in seeds.values()}) > 1:
        notes.append("seeds differ between checkpoints (" + "; ".join(f"{_short(t)}: {s}" for t, s in seeds.items())
                     + f"); only the common seeds {group.common_seeds()} are compared")
    for target in group.targets:
        for seed in group.seeds(target):
            runs = group.runs_at(target, seed)
            count = len(runs) - len({checkpoint_source(r) for r in runs}) + 1
            if count > 1:
                notes.append(f"{_short(target)} seed {seed} was run {count} times; the first run is used")
    for seed in group.common_seeds():
        instance_sets = {}
        for target in group.targets:
            frame = group.run(target, seed).per_instance()  # type: ignore[union-attr]
            if frame is not None:
                instance_sets[target] = frame["instance"].tolist()
        if len(instance_sets) >= 2 and len({tuple(sorted(v)) for v in instance_sets.values()}) > 1:
            common = set.intersection(*(set(v) for v in instance_sets.values()))
            hint = (" (audit.selection=best_per_class picks instances per checkpoint; the default "
                    "audit.selection=stratified, or audit.selection=random audit.n_instances=N, is a paired design)"
                    if (group.design.get("audit") or {}).get("selection") == "best_per_class" else "")
            notes.append(f"seed {seed}: checkpoints were examined on different instances{hint}; paired "
                         f"per-instance tests use the {len(common)} instances they share")
    return notes


def differences_between(groups: list[Group]) -> list[dict[str, Any]]:
    """For each audit with several groups: the design keys whose values differ between them."""
    out = []
    by_audit: dict[str, list[Group]] = {}
    for group in groups:
        by_audit.setdefault(group.audit, []).append(group)
    for audit, members in by_audit.items():
        if len(members) < 2:
            continue
        flat = [flatten(g.design) for g in members]
        keys = sorted(set().union(*flat))
        differing = {k: [f.get(k, "<absent>") for f in flat] for k in keys
                     if len({json.dumps(f.get(k, "<absent>"), default=str) for f in flat}) > 1}
        out.append({"audit": audit, "groups": [g.label for g in members], "differs_in": differing})
    return out


def runs_table(group: Group) -> pd.DataFrame:
    """One row per (target, seed) run of ``group`` with its numeric metrics."""
    rows = [{"target": str(r.target), "seed": r.seed, "run_dir": str(r.run_dir), **r.metrics} for r in group.runs]
    return pd.DataFrame(rows)


def _short(target: str) -> str:
    return short_name(target)
