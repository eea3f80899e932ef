"""Summaries, plots and the Markdown report of a worst-case examination (from steps.jsonl).

Numbers: the paper's ``E_T`` and the worst valid case so far at every report budget, each with a
95% bootstrap interval over instances, the share of invalid proposals per check, the failure rate
on valid proposals, per class and per instance (see :mod:`advaudit.audits.examiner_metrics`).
Plots (PNG in the run dir and W&B): E_T per iteration and the worst case so far against queries and
iterations with per-instance spread (paper Fig. 1), per-class bars (Fig. 2), t-SNE of final
examples against random ones with correct/incorrect marked (Figs. 3, 4, 6), and the worst valid
case of every instance (``worst_cases.png``, rendered at >= 96 px).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from advaudit.audits import examiner_metrics as metrics
from advaudit.audits.instance_selection import selection_design
from advaudit.audits.lazy_validity import invalid_shares, share_mask
from advaudit.audits.tsne_plot import tsne_plot
from advaudit.core.plots import image_grid, plt, save_figure
from advaudit.core.records import read_jsonl
from advaudit.models.tracking import open_wandb
from advaudit.core.intervals import format_interval, mean_with_ci
from advaudit.worlds.protocol import factor_to_unit
from advaudit.audits.settings import Mode, WorstCaseAuditConf
from advaudit.worlds.validity import independent_verdicts


GALLERY_PX = 96


def gallery_world(world: Any) -> Any:
    """``world`` rendering at least :data:`GALLERY_PX` pixels a side, where it can change its size."""
    size = getattr(world, "image_size", None)
    if hasattr(world, "with_image_size") and isinstance(size, int) and size < GALLERY_PX:
        return world.with_image_size(GALLERY_PX)
    return world


def load_history(out: Path, n: int) -> dict[str, Any]:
    """Per-instance arrays in query order: ``true_prob`` ``[N, Q]``, ``predicted`` ``[N, Q]``,
    ``valid`` ``[N, Q]`` (all True for records written before validity was judged; False where the
    reference judge was not asked, :mod:`advaudit.audits.lazy_validity`), ``checks``
    ``{name: [N, Q]}``, ``s`` ``[N, Q, C]`` (factor units)."""
    records = sorted(read_jsonl(out / "steps.jsonl"), key=lambda r: r["step"])
    order: dict[int, list[dict]] = {}
    for r in records:
        order.setdefault(r["instance"], []).append(r)
    ids = list(order)[:n]

    def stack(get: Any) -> np.ndarray:
        return np.stack([np.concatenate([np.asarray(get(r)) for r in order[i]]) for i in ids])

    def verdicts(get: Any) -> np.ndarray:  # a verdict the judge was not asked for (None) is not a valid one
        return stack(lambda r: [v is True for v in get(r)]).astype(bool)

    true_prob = stack(lambda r: r["true_prob"])
    valid = verdicts(lambda r: r.get("valid", [True] * len(r["true_prob"])))
    names = list(records[0].get("checks", {}))
    return {"ids": np.asarray(ids), "true_prob": true_prob, "predicted": stack(lambda r: r["predicted"]),
            "valid": valid, "checks": {c: verdicts(lambda r, c=c: r["checks"][c]) for c in names},
            "s": stack(lambda r: r["s"])}


def _with_ci(prefix: str, values: np.ndarray, seed: int) -> dict[str, float]:
    """``{prefix: mean, prefix/lo, prefix/hi}``: mean over instances with its 95% bootstrap interval."""
    summary = mean_with_ci(values, seed=seed)
    return {prefix: summary["mean"], f"{prefix}/lo": summary["lo"], f"{prefix}/hi": summary["hi"]}


def examination_metrics(history: dict[str, Any], labels: np.ndarray, q: int, budgets: list[int],
                        strength: bool, seed: int = 0, share_rate: float = 1.0) -> dict[str, Any]:
    """The audit's headline numbers at every budget (queries), each with a 95% bootstrap interval
    over instances (see :mod:`advaudit.audits.examiner_metrics` for the definitions); the shares of
    invalid proposals on the share sample ``share_rate`` (:func:`share_mask`)."""
    p, valid, predicted = history["true_prob"], history["valid"], history["predicted"]
    shares = invalid_shares(history, share_mask(history, seed, share_rate))
    queries = p.shape[1]
    result: dict[str, Any] = {}
    for b in budgets:
        result.update(_with_ci(f"examine/E_T@{b}", metrics.e_t(p, q, b), seed))
        result.update(_with_ci(f"examine/worst@{b}", metrics.worst(p, valid, b, strength), seed))
    result.update(_with_ci("examine/E_T", metrics.e_t(p, q, queries), seed))
    result.update(_with_ci("examine/worst", metrics.worst(p, valid, queries, strength), seed))
    result.update(_with_ci("examine/E_T_valid", metrics.e_t_valid(p, valid, q, queries), seed))
    result.update(_with_ci("examine/failure_rate", metrics.failed(predicted, valid, labels, queries).astype(float), seed))
    result["examine/invalid_share"] = shares["overall"]
    result["examine/instances_without_valid_proposal"] = int((~valid.any(1)).sum())
    result["validity"] = shares["checks"]
    result["validity_share_sample"] = float(share_rate) if "reference" in history["checks"] else 1.0
    result["budgets"] = [{"queries": b, "iterations": metrics.iteration_of_query(b, q) if b else 0} for b in budgets]
    result["q"] = int(q)
    return result


def _curve_plot(history: dict[str, Any], q: int, strength: bool, path: Path, title: str) -> Path:
    """E_T per iteration and the worst valid case so far, against queries (bottom) and iterations (top)."""
    p, valid = history["true_prob"], history["valid"]
    worst_so_far = metrics.worst_curve(p, valid, strength)
    per_iteration = metrics.e_t_curve(p, q)
    x_queries = np.arange(1, p.shape[1] + 1)
    x_iterations = np.minimum(np.arange(1, per_iteration.shape[1] + 1) * q, p.shape[1])
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for label, x, curve, color in (("E_T: proposals of iteration t (paper)", x_iterations, per_iteration, "tab:red"),
                                   ("worst valid case so far", x_queries, worst_so_far, "tab:blue")):
        with warnings.catch_warnings():  # columns before any valid proposal are all-NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(curve, 0)
            low, high = np.nanpercentile(curve, 10, 0), np.nanpercentile(curve, 90, 0)
        ax.fill_between(x, low, high, color=color, alpha=0.15)
        ax.plot(x, mean, color=color, linewidth=2, label=f"{label} (mean, 10-90% of instances)")
    ax.set_xscale("log")
    ax.set_xlabel("queries per instance")
    ax.set_ylabel("true-class probability")
    ax.set_ylim(0, 1)
    top = ax.secondary_xaxis("top", functions=(lambda v: np.asarray(v) / q, lambda v: np.asarray(v) * q))
    top.set_xlabel(f"iterations (q = {q} queries each)")
    ax.set_title(title, fontsize=9, pad=10)
    # below the axes: inside, it covered the curves where they fall (low probabilities, many queries)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=7, ncol=1, frameon=False)
    return save_figure(fig, path)


def _class_bars(per_class: dict[str, float], first: dict[str, float], path: Path) -> Path:
    names = list(per_class)
    fig, ax = plt.subplots(figsize=(max(4, 0.5 * len(names)), 3.2))
    pos = np.arange(len(names))
    ax.bar(pos - 0.2, [first[n] for n in names], 0.4, label="T = 0", color="tab:gray")
    ax.bar(pos + 0.2, [per_class[n] for n in names], 0.4, label="after examination", color="tab:red")
    ax.set_xticks(pos, names, rotation=60, fontsize=7)
    ax.set_ylabel("true-class probability")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def summarise_and_report(cfg: DictConfig, audit: WorstCaseAuditConf, world: Any, target: Any, z: Any, space: Any,
                         out: Path, seconds: float, judge: Any, q: int, budgets: list[int]) -> dict[str, Any]:
    """Compute the metrics at each budget, draw the plots, write report.md, log to W&B; return the result."""
    strength = audit.mode == Mode.strength
    calibrated = audit.calibrated
    seed = int(cfg.seed)
    history = load_history(out, len(z))
    true_prob = history["true_prob"]
    queries = true_prob.shape[1]
    budgets = [b for b in budgets if b <= queries]
    names = list(target.class_names)  # the world's classes in its order (+ a class map's "(other)", predicted too)
    labels = z.labels.cpu().numpy()
    device = getattr(world, "device", "cpu")
    share_rate = audit.validity.share_sample
    result = examination_metrics(history, labels, q, budgets, strength, seed, share_rate)
    instance_shares = invalid_shares(history, share_mask(history, seed, share_rate))["per_instance"]
    result["budget_unit"] = audit.budget_unit.value
    result["instance_selection"] = selection_design(audit.selection.value)
    e_final = metrics.e_t(true_prob, q, queries)
    worst_final = metrics.worst(true_prob, history["valid"], queries, strength)
    failed = metrics.failed(history["predicted"], history["valid"], labels, queries)
    worst_index = metrics.worst_index(true_prob, history["valid"], strength)
    rows = np.arange(len(labels))
    safe_index = np.where(worst_index >= 0, worst_index, 0)
    worst_pred = history["predicted"][rows, safe_index]
    worst_s = torch.as_tensor(history["s"][rows, safe_index], dtype=torch.float32)
    present = sorted(set(labels.tolist()))
    per_class = {names[c]: {"E_T": float(e_final[labels == c].mean()),
                            "worst": float(np.nanmean(worst_final[labels == c])) if np.isfinite(worst_final[labels == c]).any() else None,
                            "T0": float(metrics.e_t(true_prob, q, 0)[labels == c].mean()),
                            "failure_rate": float(failed[labels == c].mean()), "n": int((labels == c).sum())}
                 for c in present}
    factor_names = [f.name for f in world.factors]
    result["per_instance"] = [
        {"instance": int(history["ids"][i]), "label": int(labels[i]), "class": names[labels[i]],
         "E_T": float(e_final[i]), "worst": None if np.isnan(worst_final[i]) else float(worst_final[i]),
         "failed": bool(failed[i]), "invalid_share": float(instance_shares[i]),
         "worst_predicted": names[worst_pred[i]] if worst_index[i] >= 0 else None,
         "worst_s": dict(zip(factor_names, worst_s[i].tolist())) if worst_index[i] >= 0 else None}
        for i in range(len(labels))]

    # worst-case gallery (each instance's worst valid proposal), re-rendered at >= GALLERY_PX so a
    # person can tell the object (the model saw the scene at the world's own size)
    images = gallery_world(world).render(z, worst_s.unsqueeze(1).to(device)).cpu()
    titles = [f"{names[labels[i]]}: p={true_prob[i, safe_index[i]]:.2f}\npred {names[worst_pred[i]]}"
              + ("" if worst_index[i] >= 0 else " (no valid)") for i in range(len(labels))]
    plots = {
        "curve": _curve_plot(history, q, strength, out / "true_prob_vs_queries.png",
                             f"{cfg.examiner.name}: {'strength' if strength else 'weakness'} search"),
        "per_class": _class_bars({c: v["E_T"] for c, v in per_class.items()},
                                 {c: v["T0"] for c, v in per_class.items()}, out / "per_class.png"),
        "gallery": image_grid(images, out / "worst_cases.png", titles=titles, columns=min(8, len(labels))),
    }
    # final examples (the last iteration's proposals) against random conditions
    generator = torch.Generator().manual_seed(seed + 7)
    k = min(max(q, 5), queries)
    final_u = space_unit(space, history["s"][:, -k:]).reshape(-1, len(space.free))
    final_ok = (history["predicted"][:, -k:] == labels[:, None]).reshape(-1)
    random_free = torch.rand(len(labels), k, len(space.free), generator=generator)
    random_s = space.assemble(random_free)
    random_x, random_valid, _ = judge.render(z, random_s.to(device))
    random_p = target.predict_proba(random_x, calibrated=calibrated).argmax(1).cpu().numpy()
    random_ok = random_p == np.repeat(labels, k)
    if len(final_u) >= 6:
        plots["tsne"] = tsne_plot(final_u, final_ok, random_free.reshape(-1, len(space.free)).numpy(), random_ok,
                                   out / "tsne.png", seed)
    final_s = history["s"][:, -k:].reshape(-1, history["s"].shape[-1])
    result["final_factors"] = {f.name: factor_summary(final_s[:, i], f) for i, f in enumerate(world.factors)
                               if i in space.free}
    share = audit.factor_share
    if share:
        column = factor_names.index(share["factor"])
        threshold = float(share["abs_above"])
        result["examine/share_outside_final"] = float((np.abs(final_s[:, column]) > threshold).mean())
        result["examine/share_outside_random"] = float((random_s[..., column].abs() > threshold).float().mean())
    kept, judge_correct = label_kept(history, labels, q, worst_index, worst_s, random_s, audit.judge, world,
                                     z, device, seed)
    result.update(kept)
    for row, correct in zip(result["per_instance"], judge_correct):
        row["judge_correct"] = correct
    random_valid_flat = random_valid.reshape(-1).numpy()
    result.update({
        "examine/random_accuracy": float(random_ok.mean()),
        "examine/random_valid_accuracy": float(random_ok[random_valid_flat].mean()) if random_valid_flat.any() else None,
        "examine/random_invalid_share": float(1 - random_valid_flat.mean()),
        "validity_checks": judge.checks,
        "validity_reference": str(judge.reference_path) if judge.reference_path is not None else None,
        "validity_reference_min_prob": judge.min_prob if judge.reference_path is not None else None,
        "class_alignment": target.meta.get("class_alignment"),
        "per_class": per_class,
        "n_instances": int(len(labels)), "queries_per_instance": int(queries),
        # over every invocation of a resumed or extended run; None where a resumed checkpoint predates the count
        "queries_per_second": float(len(labels) * queries / seconds) if seconds > 0 else None,
        "seconds_examination": round(seconds, 2) if math.isfinite(seconds) else None,
        "plots": {k2: str(v) for k2, v in plots.items()},
    })
    report = out / "report.md"
    report.write_text(_markdown(cfg, audit, result, plots))
    result["report"] = str(report)
    with open_wandb(cfg, job_type="examine", name=f"worst_case-{cfg.examiner.name}") as wb:
        curve = metrics.e_t_curve(true_prob, q).mean(0)
        for t, value in enumerate(curve):
            wb.log({"examine/E_T_curve": float(value), "examine/iteration": t + 1,
                    "examine/queries": min((t + 1) * q, queries)})
        wb.log({k2: v for k2, v in result.items() if k2.startswith("examine/") and isinstance(v, (int, float))})
        for key, path in plots.items():
            wb.log_image(f"examine/{key}", path)
        wb.log_table("examine/per_instance", [{**{k2: v for k2, v in w.items() if k2 != "worst_s"}, **(w["worst_s"] or {})}
                                              for w in result["per_instance"]])
    return result


def label_kept(history: dict[str, Any], labels: np.ndarray, q: int, worst_index: np.ndarray, worst_s: torch.Tensor,
               random_s: torch.Tensor, judge_path: Any, world: Any, z: Any, device: Any,
               seed: int) -> tuple[dict[str, Any], list[bool | None]]:
    """Validity where it matters: on the examiner's worst cases, not on random conditions.

    - ``examine/worst_raw_valid``: share of instances whose lowest true-class probability over *all*
      proposals (valid or not) was on a condition that passes the validity checks (1 - this share is
      how often the examiner's best find was a view the checks throw out);
    - ``examine/final_invalid_share``: share of the last iteration's proposals that fail a check
      (where the examiner ended up), next to ``examine/random_invalid_share``;
    - with ``audit.judge`` (an independent strong model, used for nothing else):
      ``examine/judge_correct_worst`` (+ ``/lo``, ``/hi``), the share of the instances' worst valid
      cases the judge still classifies correctly, and ``examine/judge_correct_random``, its accuracy
      on random conditions of the same instances.

    Returns the summary and, per instance ``[N]``, whether the judge names its worst valid case
    correctly (``None`` without a judge or without a valid proposal).
    """
    p, valid = history["true_prob"], history["valid"]
    raw_worst = p.argmin(1)
    last = p.shape[1] - (((p.shape[1] - 1) % q) + 1)
    out: dict[str, Any] = {"examine/worst_raw_valid": float(valid[np.arange(len(p)), raw_worst].mean()),
                           "examine/final_invalid_share": float(1 - valid[:, last:].mean())}
    if not judge_path:
        return out, [None] * len(p)
    worst_verdicts, random_accuracy = independent_verdicts(world, judge_path, z, worst_s, random_s, device)
    has_worst = worst_index >= 0
    correct = worst_verdicts.numpy()[has_worst].astype(float)
    out.update(_with_ci("examine/judge_correct_worst", correct, seed) if len(correct) else {})
    out["examine/judge_correct_random"] = random_accuracy
    out["judge"] = str(judge_path)
    verdicts = worst_verdicts.tolist()
    return out, [bool(verdicts[i]) if has_worst[i] else None for i in range(len(p))]


def factor_summary(values: np.ndarray, factor: Any) -> dict[str, Any]:
    """Mean and spread of one factor's values; on a circle the circular mean and standard deviation
    (350 and 10 deg average to 0 deg, not 180)."""
    if getattr(factor, "periodic", False):
        from scipy.stats import circmean, circstd  # scipy.stats is slow to import; only this statistic needs it

        return {"mean": float(circmean(values, high=factor.high, low=factor.low)),
                "std": float(circstd(values, high=factor.high, low=factor.low)), "circular": True}
    return {"mean": float(values.mean()), "std": float(values.std())}


def space_unit(space: Any, s: np.ndarray) -> np.ndarray:
    """Searched factors of ``s`` ``[..., C]`` (factor units) mapped to the unit cube ``[..., C_free]``."""
    free = torch.as_tensor(s, dtype=torch.float32)[..., space.free]
    return factor_to_unit(free, space.free_factors).numpy()


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


def _markdown(cfg: DictConfig, audit: WorstCaseAuditConf, result: dict[str, Any], plots: dict[str, Path]) -> str:
    rows = "\n".join(f"| {queries} | {b['iterations']} | {_fmt(result, f'examine/E_T@{queries}')} | "
                     f"{_fmt(result, f'examine/worst@{queries}')} |"
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

- target: `{cfg.target}`{_classes_line(result)}
- examiner: `{cfg.examiner.name}`, mode `{audit.mode.value}`, {result['n_instances']} instances,
  {result['queries_per_instance']} queries each in iterations of q = {result['q']}
  ({result['queries_per_second'] or 0:.0f} queries/s)
- **E_T = {_fmt(result, 'examine/E_T')}**: the paper's metric (Algorithm 1), mean true-class probability
  of the examiner's proposals at its last iteration; **worst = {_fmt(result, 'examine/worst')}**: mean
  lowest true-class probability over valid proposals (95% bootstrap intervals over instances)
- instances: `{result['instance_selection']['selection']}` ({result['instance_selection']['design']} design:
  {result['instance_selection']['description']})
- a valid misclassified condition was found for {_fmt(result, 'examine/failure_rate', percent=True)} of instances
- validity: {100 * result['examine/invalid_share']:.1f}% of proposals invalid ({checks}){_sample_note(result)};
  {100 * result['examine/random_invalid_share']:.1f}% of random conditions invalid; {_reference_line(result)}
- accuracy under random valid conditions: {'n/a' if accuracy is None else f'{100 * accuracy:.1f}%'}
- validity where it matters: the lowest true-class probability of {100 * (1 - result['examine/worst_raw_valid']):.0f}%
  of instances was on a condition the checks throw out; {100 * result['examine/final_invalid_share']:.1f}% of the
  last iteration's proposals are invalid; {_judge_line(result)}

| queries | iterations | E_T (proposals of that iteration) | worst (valid, so far) |
|---|---|---|---|
{rows}

| class | instances | E_T at T = 0 | E_T | worst | failed |
|---|---|---|---|---|---|
{classes}

| instance | class | E_T | worst | predicted at worst | invalid proposals |
|---|---|---|---|---|---|
{worst}

{images}
"""
