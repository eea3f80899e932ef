"""The where section's sentences, each written here once: a region or cell in words, the test between two
checkpoints' worst cases, where one checkpoint's worst cases concentrate, a held-out check, a cell the per-factor
sensitivity says, and the section's sentences in order. The steps that compute these findings store each
sentence beside its numbers; every renderer (:mod:`advaudit.compare.render`) shows the stored sentence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from advaudit.core.intervals import format_interval
from advaudit.core.statistics import ALPHA, format_p

if TYPE_CHECKING:
    from advaudit.compare.where.regions import FactorTest


def region_words(factor: str, region: Sequence[float], unit: str = "") -> str:
    """``camera_roll 288-360 deg``; ``camera_elevation -60 to -36 deg`` where a bound is negative; an arc
    across a circle's seam reads ``camera_roll 324-36 deg``."""
    low, high = f"{region[0]:.4g}", f"{region[1]:.4g}"
    span = f"{low} to {high}" if low.startswith("-") or high.startswith("-") else f"{low}-{high}"
    return f"{factor} {span}" + (f" {unit}" if unit else "")


def region_text(factor: str, kind: str, low: float, high: float, unit: str = "", reference: float | None = None) -> str:
    """A cell in words: a fifth ``rotation 18-30 deg``; a band ``rotation within 6 deg of 0`` (the near one) or
    ``rotation 18-30 deg from 0, both ends``."""
    if kind != "band":
        return region_words(factor, (low, high), unit)
    unit = f" {unit}" if unit else ""
    if low == 0:
        return f"{factor} within {high:.3g}{unit} of {reference:g}"
    return f"{factor} {low:.3g}-{high:.3g}{unit} from {reference:g}, both ends"


def test_words(test: FactorTest | None, alpha: float = ALPHA) -> str:
    """One sentence on a pair's strongest factor test and what it proposes (None: there was none to run)."""
    if test is None:
        return "No worst-case conditions to compare between them."
    where = region_words(test.factor, test.region, test.unit)
    numbers = (f"{test.test} p = {format_p(test.p)}, Holm-corrected over the factors {format_p(test.p_holm)}; "
               f"{100 * test.share_suspect:.0f}% of {test.suspect}'s worst cases in {where}, "
               f"{100 * test.share_other:.0f}% of {test.other}'s")
    if test.proposed(alpha):
        return f"Their worst cases lie differently in {test.factor}: region proposed, {where} ({numbers})."
    return f"No factor separates where their worst cases lie at {alpha:.0%} (strongest: {test.factor}; {numbers})."


def factor_verdict(row: dict[str, Any], n_tests: int, alpha: float = ALPHA) -> str:
    """One sentence: does this checkpoint's worst-case set concentrate on this factor?"""
    unit = f" {row['unit']}" if row.get("unit") else ""
    where = "circle" if row["periodic"] else "range"
    tests = (f"{row['test']} p = {format_p(row['p'])}, Holm-corrected over {n_tests} factor"
             f"{'s' if n_tests != 1 else ''}: {format_p(row['p_holm'])}; n = {row['n']}")
    if row["p_holm"] < alpha:
        return (f"{row['factor']}: the worst cases concentrate ({100 * row['share_peak']:.0f}% in the densest fifth "
                f"of its {where}, around {row['peak']:.3g}{unit}; random conditions put 20% in any fifth) ({tests}).")
    return f"{row['factor']}: no concentration detectable at {alpha:.0%} ({tests})."


#: said of a checkpoint none of whose searched factors concentrates its worst cases (:func:`factor_verdict`)
NO_CONCENTRATION = "no factor shows a concentration of worst cases at 5% after correction."


def confirmation_words(check: dict[str, Any]) -> str:
    """The sentence the report says about one check."""
    where = region_text(check["factor"], check.get("kind", "region"), *check["region"], check.get("unit", ""),
                        check.get("reference"))
    return f"Checked on held-out instances under new random conditions with {where}: {verdict_words(check)}."


def verdict_words(check: dict[str, Any]) -> str:
    """What one check found, with its numbers (no region, no final stop): ``A is the weaker checkpoint
    there (...)`` or ``nothing separates A and B there (...)``."""
    a, b, weaker = check["a"], check["b"], check.get("weaker")
    lower, other = (a, b) if check["diff"] <= 0 else (b, a)
    sign = 1.0 if lower == a else -1.0
    lo, hi = sorted((sign * check["lo"], sign * check["hi"]))
    acc = check["accuracy_diff"]
    acc_lo, acc_hi = sorted((sign * acc["lo"], sign * acc["hi"]))
    numbers = (f"mean true-class probability {lower} {check['true_prob'][lower]:.3f} vs {other} "
               f"{check['true_prob'][other]:.3f}, paired difference "
               f"{format_interval(sign * check['diff'], lo, hi, 3, sign=True)} over {check['n']} held-out instances "
               f"x {check['conditions_per_instance']} conditions, {check.get('test', 'Wilcoxon')} p = "
               f"{format_p(check['p'])} (Holm {format_p(check['p_holm'])}"
               + (f"; {check['agree']} of {check['pairs']} pairs of files agree" if "pairs" in check else "") + "); "
               f"accuracy {check['accuracy'][lower]:.2f} vs {check['accuracy'][other]:.2f}, "
               f"{format_interval(100 * sign * acc['diff'], 100 * acc_lo, 100 * acc_hi, 0, sign=True)} points")
    if weaker is None:
        return f"nothing separates {a} and {b} there ({numbers})"
    return f"{weaker} is the weaker checkpoint there ({numbers})"


def sensitivity_words(row: dict[str, Any], n_tests: int) -> str:
    """``At rotation 18-30 deg plain is the less accurate (0.70 vs 0.80); measured from each one's ...``.

    Says first which checkpoint is the less accurate in the fifth, then the checkpoint x fifth difference
    with how far each checkpoint is from its own accuracy over all random conditions there: the
    difference can come from one losing or from the other gaining (a checkpoint trained on part of a
    range does better than its own average inside it)."""
    loser, winner, sign = (row["a"], row["b"], -1.0) if row["diff"] < 0 else (row["b"], row["a"], 1.0)
    acc = {row["a"]: row["acc_a"], row["b"]: row["acc_b"]}
    overall = {row["a"]: row["overall_a"], row["b"]: row["overall_b"]}
    lo, hi = sorted((100 * sign * row["lo"], 100 * sign * row["hi"]))
    where = row.get("place") or region_words(row["factor"], (row["low"], row["high"]), row.get("unit", ""))
    own = ", ".join(f"{name} {_shift(acc[name] - overall[name])} its {overall[name]:.2f}" for name in (loser, winner))
    return (f"At {where} {loser} is the less accurate ({acc[loser]:.2f} vs {acc[winner]:.2f}); measured from "
            f"each one's accuracy over all random conditions, {loser} does "
            f"{100 * sign * row['diff']:.0f} points worse there than {winner} ({own}; checkpoint x fifth difference "
            f"{format_interval(100 * sign * row['diff'], lo, hi, 0)} points over {row['n']} held-out instances, "
            f"Wilcoxon p = {format_p(row['p'])}, Holm over {n_tests} factor cells {format_p(row['p_holm'])}).")


def _shift(delta: float) -> str:
    """``13 points lower than`` / ``2 points higher than`` / ``the same as``: an accuracy change in whole points."""
    points = round(100 * abs(delta))
    if points == 0:
        return "the same as"
    return f"{points} point{'s' if points != 1 else ''} {'lower' if delta < 0 else 'higher'} than"


def recipe_words(row: dict[str, Any], n_tests: int) -> str:
    """``Over their files (3 and 3), at X plain is the less accurate (0.62 vs 0.70); ... in each of the 9 pairs of
    files ...``: the recipes' difference over the files, then the test that says it (every pair of files, over
    instances: :mod:`advaudit.compare.where.sensitivity_recipes`)."""
    loser, winner, sign = (row["a"], row["b"], -1.0) if row["diff"] < 0 else (row["b"], row["a"], 1.0)
    acc = {row["a"]: row["acc_a"], row["b"]: row["acc_b"]}
    lo, hi = sorted((100 * sign * row["lo"], 100 * sign * row["hi"]))
    files = f"{row['n'][0]} and {row['n'][1]}"
    return (f"Over their files ({files}), at {row['place']} {loser} is the less accurate ({acc[loser]:.2f} vs "
            f"{acc[winner]:.2f}); measured from each file's accuracy over all random conditions, {loser} does "
            f"{100 * sign * row['diff']:.0f} points worse there than {winner} (recipe x cell difference "
            f"{format_interval(100 * sign * row['diff'], lo, hi, 0)} points over the files, Welch p = "
            f"{format_p(row['p'])}); said in each of the {row['pairs']} pairs of files, tested over "
            f"{row['n_instances']} held-out instances (Wilcoxon, Holm over {n_tests} factor cells in each pair: at "
            f"most {format_p(row['p_holm_pairs'])}).")


#: said under a finding between single files: it is about the two files compared, not yet about their recipes
SEED_CAVEAT = ("These differences are between the checkpoint files compared. Two training seeds of one recipe can "
               "differ as much in a cell of a factor; to attribute a finding to what distinguishes the recipes, give "
               "several files (training seeds) of each recipe one name and compare them as recipes.")


def sentences(section: dict[str, Any]) -> list[str]:
    """What the section says, in order: per pair tested and confirmed, the said cells, the recipes' checks."""
    lines = []
    for pair in section["pairs"]:
        lines.append(f"{pair['a']} vs {pair['b']}: {pair['tested_words']}")
        if pair["confirmation"]:
            lines.append(pair["confirmation"]["words"])
    rows = sorted(section["sensitivity"]["pairs"], key=lambda r: -abs(r["diff"]))
    said = [r for r in rows if r["said"]]
    margin = (section.get("settings") or {}).get("min_points", 0)
    lines += [r["words"] for r in said] or [
        "On paired random conditions no cell of any factor (fifth of its range, or band of distance from its reference) "
        f"separates how much the checkpoints lose there by more than {margin:g} points (Holm over the cells)."]
    for check in section.get("recipe_checks", []):
        lines.append(("Over the recipes' files: " + check["words"]) if check.get("words") else
                     f"{check['a']} vs {check['b']}: the said cell was not checked, the held-out split has no "
                     "instances left beyond those that proposed it (use fewer --where-instances).")
    files_findings = [r for r in said if r.get("design") != "recipes"] + [
        p for p in section["pairs"] if p["design"] == "files" and (p["confirmation"] or {}).get("weaker")]
    if files_findings:
        lines.append(SEED_CAVEAT)
    return lines
