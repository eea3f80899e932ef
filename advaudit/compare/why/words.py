"""The why section's sentences, each written here once: the gap, what explains or hides it, (recipes) its
confirmation, the headline, and the section's sentences in order (:func:`sentences`)."""

from __future__ import annotations

from typing import Any

from advaudit.compare.why.plan import Intervention
from advaudit.core.intervals import format_interval
from advaudit.core.statistics import format_p
from advaudit.worlds.references import references_of


def points(value: float) -> str:
    """An accuracy difference in signed points: ``-4.0``."""
    return f"{100 * value:+.1f}"


def interval_points(row: dict[str, Any], sign: float = 1.0) -> str:
    """``4.7 [3.2, 6.1]`` points of ``row`` (``diff``, ``lo``, ``hi`` in accuracy), multiplied by ``sign``."""
    lo, hi = sorted((sign * row["lo"], sign * row["hi"]))
    return format_interval(100 * sign * row["diff"], 100 * lo, 100 * hi, 1)


def test_words(row: dict[str, Any], design: str, tests: int | None = None) -> str:
    """``Wilcoxon p = ..., Holm over 14 interventions ...`` / ``Welch t over files p = ...``."""
    name = "Welch t over files" if design == "recipes" else "Wilcoxon"
    holm = f", Holm over {tests} interventions {format_p(row['p_holm'])}" if tests else ""
    return f"{name} p = {format_p(row['p'])}{holm}"


def gap_words(result: dict[str, Any], n: int, m: int) -> str:
    """The gap as drawn: each side's accuracy on the same renders and their difference."""
    a, b, gap = result["a"], result["b"], result["gap"]
    unit = (f"over their files ({len(result['files'][a])} and {len(result['files'][b])}, {gap['test']})"
            if result["design"] == "recipes" else f"over instances ({gap['test']})")
    return (f"On {n} held-out instances x {m} random conditions, rendered once and scored by both, {a} is right on "
            f"{100 * gap['accuracy'][a]:.1f}% and {b} on {100 * gap['accuracy'][b]:.1f}%: {a} − {b} = "
            f"{interval_points(gap)} points {unit}, p = {format_p(gap['p'])}.")


def reference_words(k: Intervention, references: dict[str, float | None], units: dict[str, str]) -> str:
    """``brightness, contrast and gamma at their reference (0, 1, 1)``."""
    if k.kind == "all":
        listed = f" ({k.words.split('(', 1)[1]}" if "(" in k.words else ""
        return f"every factor that has a reference set to it{listed}"
    values = ", ".join(f"{references[f]:g}" + (f" {units[f]}" if units.get(f) and k.kind == "factor" else "")
                       for f in k.factors)
    return f"{k.words} at {'their' if k.plural else 'its'} reference ({values})"


def gap_move(gap: float, remaining: float) -> str:
    """How the gap moves when factors are set to their reference: it "falls" when smaller, "reverses" when the
    other checkpoint is then ahead by at least as much, else it "widens"."""
    if abs(remaining) < abs(gap):
        return "falls"
    return "reverses" if gap * remaining < 0 else "widens"


def row_words(row: dict[str, Any], result: dict[str, Any], k: Intervention, references: dict[str, float | None],
              units: dict[str, str], tests: int) -> str:
    """One said intervention: how the gap moves with it taken away and the part it explains or hides."""
    gap, design = result["gap"], result["design"]
    head = f"With {reference_words(k, references, units)}"
    move = (f"the gap between {result['a']} and {result['b']} {gap_move(gap['diff'], row['remaining'])}"
            f" from {points(gap['diff'])} to {points(row['remaining'])} points")
    verb = {"explains": "explain" if k.plural else "explains", "hides": "hide" if k.plural else "hides",
            "opens": "change it by"}[row["relation"]]
    sign = 1.0 if row["relation"] != "hides" else -1.0
    agree = f"; in all {row['pairs']} pairs of files" if design == "recipes" else ""
    pronoun = "they" if k.plural else "it"
    part = "of it" if row["relation"] == "hides" else ""
    return (f"{head}, {move}: {pronoun} {verb} {interval_points(row, sign)} points {part}".rstrip()
            + f" ({test_words(row, design, tests)}{agree}).")


def nothing_words(result: dict[str, Any], tests: int) -> str:
    """When no intervention is said."""
    if not tests:
        return "No factor of this world has a reference value, so no intervention can explain the gap (see where)."
    strongest = min(result["rows"], key=lambda r: r.get("p_holm", 1.0))
    return (f"No factor or group of factors explains or hides the gap between {result['a']} and {result['b']} at 5% "
            f"after Holm over {tests} interventions (strongest: {strongest['name']}, "
            f"{interval_points(strongest)} points, {test_words(strongest, result['design'])}).")


def confirmation_words(check: dict[str, Any], k: Intervention, references: dict[str, float | None],
                       units: dict[str, str]) -> str:
    """A said finding checked on other held-out instances (between recipes; a leading combination between files)."""
    sign = 1.0 if check["relation"] != "hides" else -1.0
    verdict = "confirmed" if check["confirmed"] else "not confirmed"
    design = check.get("design", "recipes")
    agree = f"; {check['agree']} of {check['pairs']} pairs of files agree" if design == "recipes" else ""
    chosen = (" (the factors that explain most alone, combined: chosen from the renders above, so tested on new ones)"
              if k.kind == "leading" else "")
    return (f"{verdict.capitalize()} on {check['n_instances']} other held-out instances{chosen}: with "
            f"{reference_words(k, references, units)} the gap moves by {interval_points(check, sign)} points "
            f"({test_words(check, design)}{agree}).")


FILES_CAVEAT = ("Between two files, an explanation is about these files: two training seeds of one recipe can "
                "differ as much. Compare several files (training seeds) per recipe to attribute it to the recipe.")


def sentences(section: dict[str, Any], world: Any, plan: list[Intervention]) -> list[str]:
    """What the section says, per pair: the gap, its headline and every other said intervention, the caveat."""
    references = references_of(world)
    units = {f.name: str(getattr(f, "unit", "") or "") for f in world.factors}
    by_name = {k.name: k for k in plan}
    lines = []
    for result in section["pairs"]:
        lines.append(gap_words(result, section["instances"], section["conditions_per_instance"]))
        said = sorted((r for r in result["rows"] if r["said"]),
                      key=lambda r: (r["name"] != result["headline"], -abs(r["diff"])))
        for row in said:
            lines.append(row_words(row, result, by_name[row["name"]], references, units, len(result["rows"])))
            if row["name"] == result["headline"]:
                result["headline_words"] = lines[-1]
            if row.get("confirmation"):
                lines.append(confirmation_words(row["confirmation"], by_name[row["name"]], references, units))
        if not said:
            lines.append(nothing_words(result, len(result["rows"])))
        elif result["design"] == "files":
            lines.append(FILES_CAVEAT)
        result.setdefault("headline_words", lines[-1] if not said else no_headline_words(result, said))
    return lines


def no_headline_words(result: dict[str, Any], said: list[dict[str, Any]]) -> str:
    """The headline when rows are said but none names a cause: what hides the gap, or that nothing confirmed."""
    confirmed = ", confirmed on other held-out instances," if result["design"] == "recipes" else ""
    hiding = [r["name"] for r in said if r["relation"] == "hides"]
    hides = (f"; {', '.join(hiding)} {'hides' if len(hiding) == 1 else 'hide'} part of it" if hiding else "")
    return f"No factor or group of factors is said{confirmed} to explain the gap{hides}; see the why section."
