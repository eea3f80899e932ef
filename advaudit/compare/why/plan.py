"""The interventions of a comparison: which factors are set to their reference, alone and together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from advaudit.worlds.references import groups_of, references_of

#: the name of the intervention that sets every factor with a reference to it (what is left: the gap on views
#: as plain as the world allows; the clean images in TransformWorld)
EVERY_FACTOR = "every factor"


@dataclass(frozen=True)
class Intervention:
    """``factors`` set to their reference values; ``kind``: ``factor`` (one), ``group`` (a world's or a user's
    group), ``all`` (every factor that has a reference) or ``leading`` (the factors that explain most of a pair's
    gap alone, combined: chosen from the renders, so said only once confirmed on other instances)."""

    name: str
    factors: tuple[str, ...]
    kind: str

    @property
    def words(self) -> str:
        """``brightness`` / ``brightness, contrast and gamma`` / ``every factor with a reference``."""
        names = list(self.factors)
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        if self.kind == "all":
            return f"every factor with a reference ({listed})" if len(names) <= 4 else "every factor with a reference"
        return listed

    @property
    def plural(self) -> bool:
        return self.kind == "all" or len(self.factors) > 1

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "factors": list(self.factors), "kind": self.kind}


def interventions(world: Any, extra_groups: Mapping[str, Sequence[str]] | None = None) -> list[Intervention]:
    """Every factor of ``world`` that has a reference and a range, alone; then the world's and the user's groups
    (:func:`advaudit.worlds.references.groups_of`) of such factors; then all of them together (when more than one).
    Empty when no factor has a reference (the where section's region test is then the only check)."""
    references = references_of(world)
    ranged = [f.name for f in world.factors if f.high > f.low and references.get(f.name) is not None]
    out = [Intervention(name, (name,), "factor") for name in ranged]
    for group, members in groups_of(world, extra_groups).items():
        kept = tuple(m for m in members if m in ranged)
        if len(kept) >= 2 and len(kept) < len(ranged):
            out.append(Intervention(group, kept, "group"))
    if len(ranged) >= 2:
        out.append(Intervention(EVERY_FACTOR, tuple(ranged), "all"))
    return out


#: the most factors a leading combination holds
LEADING_MAX = 3


def leading(rows: Sequence[Mapping[str, Any]], plan: Sequence[Intervention],
            max_factors: int = LEADING_MAX) -> list[Intervention]:
    """The combinations a pair's single-factor rows point at: the ``k`` factors that explain most of the gap alone
    (``relation`` ``explains``, largest ``|diff|`` first), for ``k`` = 2 .. ``max_factors``, each unless its set of
    factors is already planned (a group, every factor). A cause that spans factors of different groups (rotation
    and brightness) is then one intervention, not two partial ones; which factors are in it was read off these
    renders, so its test on them is biased and it is said only once confirmed on other held-out instances."""
    singles = sorted((r for r in rows if r["kind"] == "factor" and r["relation"] == "explains" and r["diff"] != 0),
                     key=lambda r: -abs(r["diff"]))
    planned = {frozenset(k.factors) for k in plan}
    out = []
    for k in range(2, min(max_factors, len(singles)) + 1):
        factors = tuple(r["factors"][0] for r in singles[:k])
        if frozenset(factors) not in planned:
            out.append(Intervention(" + ".join(factors), factors, "leading"))
    return out
