"""The Markdown report of a worst-case examination, written from its result (``result.json``'s content)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from advaudit.audits.settings import WorstCaseAuditConf
from advaudit.core.intervals import format_interval


def _fmt(result: dict[str, Any], key: str, percent: bool = False) -> str:
    """``mean [lo, hi]`` of ``key`` (as percentages with ``percent``; ``n/a`` when missing or NaN)."""
    value = result.get(key)
    if value is None or value != value:
        return "n/a"
    return format_interval(value, result[key + "/lo"], result[key + "/hi"], 0 if percent else 4, percent=percent)


def _classes_line(result: dict[str, Any]) -> str:
    """How the target's classes were paired with the world's, where that was more than equal names in order."""
    said = (result.get("class_alignment") or {}).get("description")
    return f"\n- classes: {said}" if said else ""


def _sample_note(result: dict[str, Any]) -> str:
    rate = result.get("validity_share_sample", 1.0)
    return "" if rate >= 1 else f" (the judge's shares on a seeded {100 * rate:.2g}% sample of the queries)"


def _percent(share: float | None) -> str:
    return "n/a" if share is None or share != share else f"{100 * share:.0f}%"


def _reference_line(result: dict[str, Any]) -> str:
    reference = result.get("validity_reference")
    if reference is None:
        return ("no reference judge in the check (`audit.validity.reference=null`, or a world without its own): "
                "views a person could not name can count as failures")
    threshold = result.get("validity_reference_min_prob")
    return f"reference judge in the check: `{reference}`" + (
        "" if threshold is None else f" (the true class at calibrated probability >= {threshold:g})")


def _judge_line(result: dict[str, Any]) -> str:
    if "examine/judge_correct_worst" not in result:
        return ("no independent judge was given, so whether the worst cases keep their label is not measured "
                "(`audit.judge=<a strong target.pt>`, trained for instance by "
                "`train.py experiment=examiner/train_judge`)")
    return (f"the independent judge `{result['judge']}` still classifies "
            f"{_fmt(result, 'examine/judge_correct_worst', percent=True)} of the worst valid cases correctly "
            f"({100 * result['examine/judge_correct_random']:.0f}% of random conditions)")


def _in_loss(audit: WorstCaseAuditConf) -> str:
    if audit.validity.in_loss.value == "barrier":
        return "no loss for a proposal the validity check throws out (`audit.validity.in_loss=barrier`): it searched S"
    return ("the raw loss of every proposal, valid or not (`audit.validity.in_loss=none`): it could score proposals "
            "outside S as weaknesses")


def _endpoint_line(record: dict[str, Any] | None) -> str:
    """Where a served target was queried, the model version its server reported and the time spent waiting on it
    (``record``: :attr:`advaudit.audits.worst_case_record.ExaminationRecord.endpoint`; the sums of a sharded
    examination's jobs)."""
    if record is None:
        return ""
    server = " ".join(str(v) for v in record["server"].values())
    jobs = f" by its {record['jobs']} shards" if record.get("jobs") else ""
    return (f"\n- endpoint: {record['endpoint']}, model version {record['model_version'] or 'not reported'}"
            f"{f' ({server})' if server else ''}: {record['inputs']} inputs in {record['requests']} requests{jobs} "
            f"so far ({record.get('sent_as') or ('binary tensors' if record.get('binary') else 'JSON')}), "
            f"{record['seconds_waiting']:.1f} s waiting on the server")


def markdown(cfg: DictConfig, audit: WorstCaseAuditConf, result: dict[str, Any], plots: dict[str, Path],
             endpoint: dict[str, Any] | None = None) -> str:
    rows = "\n".join(f"| {queries} | {b['iterations']} | {_fmt(result, f'examine/E_T_valid@{queries}')} | "
                     f"{_fmt(result, f'examine/E_T@{queries}')} | {_fmt(result, f'examine/worst@{queries}')} |"
                     for b in result["budgets"] for queries in [b["queries"]])
    classes = "\n".join(f"| {c} | {v['n']} | {v['T0']:.3f} | {v['E_T']:.3f} | "
                        f"{'n/a' if v['worst'] is None else format(v['worst'], '.3f')} | {100 * v['failure_rate']:.0f}% |"
                        for c, v in result["per_class"].items())
    worst = "\n".join(f"| {w['instance']} | {w['class']} | {w['E_T']:.3f} | "
                      f"{'n/a' if w['worst'] is None else format(w['worst'], '.3f')} | {w['worst_predicted']} | "
                      f"{_percent(w['invalid_share'])} |" for w in result["per_instance"])
    checks = ", ".join(f"{name}: {100 * share:.1f}% fail" for name, share in result["validity"].items()) or "none"
    images = "\n".join(f"![{k}]({Path(p).name})" for k, p in plots.items())
    accuracy = result["examine/random_valid_accuracy"]
    return f"""# Worst-case audit

- target: `{cfg.target}`{_endpoint_line(endpoint)}{_classes_line(result)}
- examiner: `{cfg.examiner.name}`, mode `{audit.mode.value}`, {result['n_instances']} instances,
  {result['queries_per_instance']} queries each in iterations of q = {result['q']}
  ({result['queries_per_second'] or 0:.0f} queries/s)
- **E_T inside S = {_fmt(result, 'examine/E_T_valid')}** (the primary question): the paper's metric (Algorithm 1)
  on the proposals that keep the label, mean true-class probability of the examiner's final valid proposals;
  E_T over all final proposals, valid or not = {_fmt(result, 'examine/E_T')}; **worst =
  {_fmt(result, 'examine/worst')}**: mean lowest true-class probability over valid proposals (95% bootstrap
  intervals over instances)
- {result.get('examiner_moved_words', 'how far E_T moved from T = 0 was not measured')}
- the examiner was told {_in_loss(audit)}
- instances: `{result['instance_selection']['selection']}` ({result['instance_selection']['design']} design:
  {result['instance_selection']['description']})
- a valid misclassified condition was found for {_fmt(result, 'examine/failure_rate', percent=True)} of instances
- validity ({checks}){_sample_note(result)}: invalid are {100 * result['examine/invalid_share']:.1f}% of all
  proposals ({result['queries_per_instance']} per instance, the first, nearly random iterations included),
  {100 * result['examine/final_invalid_share']:.1f}% of the last iteration's proposals (where the examiner ended up)
  and {100 * result['examine/random_invalid_share']:.1f}% of random conditions; {_reference_line(result)}
- accuracy under random valid conditions: {'n/a' if accuracy is None else f'{100 * accuracy:.1f}%'}
- validity where it matters: the lowest true-class probability of {100 * (1 - result['examine/worst_raw_valid']):.0f}%
  of instances was on a condition the checks throw out; {_judge_line(result)}

| queries | iterations | E_T inside S (final window) | E_T (proposals of that iteration) | worst (valid, so far) |
|---|---|---|---|---|
{rows}

| class | instances | E_T at T = 0 | E_T | worst | failed |
|---|---|---|---|---|---|
{classes}

| instance | class | E_T | worst | predicted at worst | invalid proposals |
|---|---|---|---|---|---|
{worst}

{images}
"""
