"""One answer per pair of checkpoints: the primary question's verdict, the other metrics as evidence.

Each audit declares one primary metric before any data exists (its ``audit.metric``: the paper's
headline number; the user may name another with ``compare.primary`` or ``--primary``), recorded in
every run's ``result.json`` as ``primary``. A comparison answers that question first, for each
pair: which checkpoint is weaker, by how much (the paired difference in the metric's own units,
weaker minus stronger, with its 95% interval) and how surely (the p-value Holm-corrected over the pairs
of the primary question; :mod:`advaudit.compare.differences`). Every other metric is evidence: it *supports* the
primary verdict when it names the same checkpoint weaker at 5% after Holm over the evidence's own tests,
*conflicts* when it names the other, and never heads the report.

Two cases give no verdict, whatever the p-value:

- **identical**: the largest paired difference is below :data:`PRECISION` (a state_dict and its own
  ONNX export differ by ~1e-8): the checkpoints *score identically*, and no power advice follows
  (scores exactly equal at a bound, such as every instance failed by both, read as that bound);
- **floor / ceiling**: both checkpoints' means lie within :data:`BOUND_TOLERANCE` of the range of one
  bound of the metric (every worst case at 0.00, every instance failed): the metric has nothing
  left to separate them with, and the report says so in words;
- **judged**: a failure rate where, for both checkpoints in every run, exactly the instances with a
  valid view failed (some had none): it is the share of instances the validity check could judge, the
  same for both whatever their weakness.
"""

from __future__ import annotations

import math
from typing import Any

from advaudit.compare.metrics import Metric
from advaudit.compare.records import RunRecord
from advaudit.core.intervals import format_interval
from advaudit.core.statistics import ALPHA, format_p
from advaudit.errors import require

#: float32 softmax probabilities carry about 7 significant digits; two exports of one model's weights
#: (state_dict and ONNX) differ by ~1e-8 per instance, two trainings by 1e-3 and more
PRECISION = 1e-6
#: a checkpoint within this share of the metric's range of a bound is "at" that bound (0.02: 0.02 on
#: a probability; on a metric without a ceiling, 0.02 in its own units above the floor)
BOUND_TOLERANCE = 0.02


def declared_primary(runs: list[RunRecord]) -> str | None:
    """The primary metric the runs declared (``result["primary"]``, else their config), or None."""
    for run in runs:
        config = run.config or {}
        declared = (run.result.get("primary") or (config.get("compare") or {}).get("primary")
                    or (config.get("audit") or {}).get("metric"))
        if declared:
            return str(declared)
    return None


def primary_metric(metrics: list[Metric], runs: list[RunRecord], override: str | None = None) -> Metric | None:
    """The group's primary metric: ``override``, else what the runs declared, else the audit's first."""
    if not metrics:
        return None
    by_key = {m.key: m for m in metrics}
    if override:
        require(override in by_key, f"--primary {override} is not a metric of these runs; use one of {list(by_key)}")
        return by_key[override]
    declared = declared_primary(runs)
    return by_key.get(declared or "", metrics[0])


def primary_note(metrics: list[Metric], runs: list[RunRecord], used: Metric | None) -> str | None:
    """A note when the runs declared a primary metric they do not report (a typo in ``compare.primary``)."""
    declared = declared_primary(runs)
    if declared and used is not None and declared != used.key and declared not in {m.key for m in metrics}:
        return f"the runs declare the primary metric {declared}, which they do not report; {used.key} is used instead"
    return None


def bound_of(metric: Metric, means: tuple[float, float]) -> str | None:
    """``"floor"`` / ``"ceiling"`` when both checkpoints' means sit at that bound of ``metric``, else None."""
    if not all(math.isfinite(m) for m in means):
        return None
    span = (metric.high - metric.low) if metric.low is not None and metric.high is not None else 1.0
    tolerance = BOUND_TOLERANCE * span
    if metric.low is not None and all(m <= metric.low + tolerance for m in means):
        return "floor"
    if metric.high is not None and all(m >= metric.high - tolerance for m in means):
        return "ceiling"
    return None


def identical(row: dict[str, Any]) -> bool:
    """True when every paired difference of ``row`` is below the scores' precision."""
    return math.isfinite(row.get("max_abs_diff", float("nan"))) and row["max_abs_diff"] < PRECISION


def judge(row: dict[str, Any], metric: Metric, means: tuple[float, float]) -> dict[str, Any]:
    """``{"status", "weaker", "bound"}`` of one pair on one metric (module docstring).

    ``status``: ``identical``, ``floor``/``ceiling``, ``judged`` (a failure rate that is the share of
    instances with a valid view, for both), ``weaker`` (``weaker`` names the target),
    ``differ`` (significant, but the metric has no direction), ``none`` (nothing detectable).
    """
    bound = bound_of(metric, means)
    if row.get("fails_where_judged") and not bound:
        return {"status": "judged", "weaker": None}
    if identical(row) and not (bound and row["max_abs_diff"] == 0):  # equal 0/1 outcomes at a bound: saturated
        return {"status": "identical", "weaker": None}
    if bound:
        return {"status": bound, "weaker": None}
    significant = math.isfinite(row.get("p_holm", float("nan"))) and row["p_holm"] < ALPHA and row["diff"] != 0
    if not significant:
        return {"status": "none", "weaker": None}
    if metric.higher_is_better is None:
        return {"status": "differ", "weaker": None}
    a_better = (row["diff"] > 0) == metric.higher_is_better
    return {"status": "weaker", "weaker": row["b"] if a_better else row["a"]}


def oriented(row: dict[str, Any], weaker: str | None) -> tuple[str, str, str]:
    """``(first, second, "first − second = d [lo, hi]")`` with the weaker checkpoint first when there is one."""
    flip = weaker is not None and weaker == row["b"]
    first, second = (row["b"], row["a"]) if flip else (row["a"], row["b"])
    d, lo, hi = row["diff"], row.get("lo", float("nan")), row.get("hi", float("nan"))
    if flip:
        d, lo, hi = -d, -hi, -lo
    text = (format_interval(d, lo, hi, 3, sign=True) if math.isfinite(lo) and math.isfinite(hi)
            else f"{d:+.3f} (no interval)")
    return first, second, text


def p_words(row: dict[str, Any], family: str = "") -> str:
    """A pair's test in words, ``Wilcoxon signed-rank p = 0.012, Holm-corrected <family> 0.024``, or why it has
    none (:func:`no_test_words`)."""
    if not math.isfinite(row.get("p", float("nan"))):
        return no_test_words(row)
    family = f"{family} " if family else ""
    return f"{row['test']} p = {format_p(row['p'])}, Holm-corrected {family}{format_p(row['p_holm'])}"


def no_test_words(row: dict[str, Any]) -> str:
    """Why a pair has no p-value, in words that cannot be read as a test's result."""
    if row.get("units") == "files":
        files = row.get("n_files") or ["?", "?"]
        return (f"not tested: Welch's test over the files ({files[0]} and {files[1]}) has no spread to test, every file "
                "of each recipe has the same value")
    runs = int(row.get("n_seeds", 0) or 0)
    return (f"not tested: one value per run and {runs} run{'s' if runs != 1 else ''} per checkpoint (a test needs "
            "per-instance values or at least 6 seeds)")


def _p(row: dict[str, Any], tests: int) -> str:
    size = int(row.get("family_size", tests))
    family = {"primary": f"over the {size} pair{'s' if size != 1 else ''} of the primary question",
              "evidence": f"over the evidence's {size} tests"}.get(str(row.get("family")), f"over {size} tests")
    return p_words(row, family)


def row_verdict(row: dict[str, Any], metric: Metric, names: dict[str, str], audit: str) -> str:
    """A plain-words sentence for one pair on one metric (the pairs table's ``verdict``)."""
    a, b = names.get(row["a"], row["a"]), names.get(row["b"], row["b"])
    interval = (f"difference {format_interval(row['diff'], row['lo'], row['hi'], 3, sign=True)} over {row['interval_over']}"
                if math.isfinite(row.get("lo", float("nan"))) else f"difference {row['diff']:+.3f} (no interval)")
    detail = f"{metric.words}: {interval}; {p_words(row)}"
    if "only_a" in row:
        outcome = {"failed": "failed", "correct": "was right"}.get(str(metric.column), f"had {metric.column}")
        detail += f"; only {a} {outcome} on {row['only_a']}, only {b} on {row['only_b']} (instance x seed)"
    significant = math.isfinite(row.get("p_holm", float("nan"))) and row["p_holm"] < ALPHA
    if not significant or metric.higher_is_better is None or row["diff"] == 0:
        if significant:
            return f"{a} and {b} differ under {audit} ({detail})."
        return f"No difference between {a} and {b} under {audit} is detectable at 5% ({detail})."
    a_better = (row["diff"] > 0) == metric.higher_is_better
    better, worse = (a, b) if a_better else (b, a)
    return f"{worse} is worse than {better} under {audit} ({detail})."


def primary_sentence(row: dict[str, Any], metric: Metric, names: dict[str, str], means: dict[str, float],
                     judged: dict[str, Any], tests: int) -> str:
    """The headline of one pair: who is weaker on the primary question, or why there is no verdict."""
    first, second, diff = oriented(row, judged["weaker"])
    n1, n2 = names.get(first, first), names.get(second, second)
    status = judged["status"]
    if status == "identical":
        return (f"{n1} and {n2} score identically on {metric.words}: the largest paired difference, "
                f"{row['max_abs_diff']:.1g}, is below the scores' precision ({PRECISION:g}).")
    if status in ("floor", "ceiling"):
        edge = metric.low if status == "floor" else metric.high
        return (f"Both checkpoints' {metric.words} are at the {status}, {edge:.2f} ({n1} {means[first]:.3f}, "
                f"{n2} {means[second]:.3f}): this metric cannot separate them; no verdict.")
    if status == "judged":
        return (f"Every instance with a valid view failed for both checkpoints ({n1} {means[first]:.3f}, "
                f"{n2} {means[second]:.3f}): {metric.words} counts the instances the validity check could judge "
                "and cannot separate them; no verdict.")
    detail = f"{n1} − {n2} = {diff} over {row.get('interval_over', 'n/a')}; {_p(row, tests)}"
    if status == "weaker":
        return f"{n1} is weaker than {n2} on {metric.words} ({detail})."
    if status == "differ":
        return f"{n1} and {n2} differ on {metric.words}, which has no better direction ({detail})."
    return f"No difference between {n1} and {n2} on {metric.words} is detectable at 5% after correction ({detail})."


def secondary_sentence(row: dict[str, Any], metric: Metric, names: dict[str, str], means: dict[str, float],
                       judged: dict[str, Any], primary_weaker: str | None, tests: int) -> tuple[str, str]:
    """``(relation, sentence)`` of one secondary metric: supports, conflicts, or why it says nothing. The pair is
    written in the order of the primary's verdict unless this metric names its own weaker checkpoint."""
    first, second, diff = oriented(row, judged["weaker"] or primary_weaker)
    n1, n2 = names.get(first, first), names.get(second, second)
    values = f"{n1} {means[first]:.3f}, {n2} {means[second]:.3f}"
    status = judged["status"]
    if status == "identical":
        return "identical", f"{metric.words}: identical (largest paired difference {row['max_abs_diff']:.1g})."
    if status in ("floor", "ceiling"):
        edge = metric.low if status == "floor" else metric.high
        return status, (f"{metric.words}: both at the {status}, {edge:.2f} ({values}); it cannot separate them.")
    if status == "judged":
        return status, (f"{metric.words}: every instance with a valid view failed, for both ({values}); it counts "
                        "the instances the validity check could judge and cannot separate them.")
    detail = f"{n1} − {n2} = {diff}; {_p(row, tests)}"
    if status != "weaker":
        return "none", f"{metric.words}: does not separate them at 5% after correction ({detail})."
    if primary_weaker is None:
        return "alone", (f"{metric.words}: names {n1} weaker where the primary question gives no verdict ({detail}); "
                         "a lead to follow, not a verdict.")
    relation = "supports" if judged["weaker"] == primary_weaker else "conflicts"
    return relation, f"{metric.words}: {n1} weaker ({detail})."


def answers(pairs: list[dict[str, Any]], metrics: list[Metric], primary: Metric, names: dict[str, str],
            checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per checkpoint pair: the primary verdict, then each secondary metric's relation to it.

    Also sets ``row["status"]``, ``row["weaker"]`` and ``row["relation"]`` on the rows of ``pairs``.
    """
    by_key = {m.key: m for m in metrics}
    means = {(r["target"], r["metric"]): float(r["mean"]) for r in checkpoints}
    tests = sum(1 for r in pairs if math.isfinite(r.get("p", float("nan"))))
    out = []
    for a, b in dict.fromkeys((r["a"], r["b"]) for r in pairs):
        rows = [r for r in pairs if (r["a"], r["b"]) == (a, b)]
        head = next((r for r in rows if r["metric"] == primary.key), None)
        if head is None:
            continue
        m = {key: {a: means.get((a, key), float("nan")), b: means.get((b, key), float("nan"))}
             for key in by_key}                                    # {metric: {checkpoint: mean}}
        judged = judge(head, primary, (m[primary.key][a], m[primary.key][b]))
        head.update(status=judged["status"], weaker=judged["weaker"], relation="primary")
        answer = {"a": a, "b": b, "metric": primary.key, **judged,
                  "text": primary_sentence(head, primary, names, m[primary.key], judged, tests),
                  "secondary": []}
        for row in rows:
            if row is head:
                continue
            metric = by_key[row["metric"]]
            other = judge(row, metric, (m[metric.key][a], m[metric.key][b]))
            relation, text = secondary_sentence(row, metric, names, m[metric.key], other, judged["weaker"], tests)
            row.update(status=other["status"], weaker=other["weaker"], relation=relation)
            answer["secondary"].append({"metric": row["metric"], "relation": relation, "text": text})
        out.append(answer)
    return out
