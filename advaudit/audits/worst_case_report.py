"""Summaries, plots and the Markdown report of a worst-case examination, from its records alone.

The report reads what the run recorded: the examiner's queries (``steps.jsonl``) and what the run
rendered and queried on conditions of its own (``fresh_conditions.pt``, see
:mod:`advaudit.audits.worst_case_fresh`); it renders nothing and queries no model.

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
from advaudit.audits.examiner_movement import examination_movement
from advaudit.audits.instance_selection import selection_design
from advaudit.audits.lazy_validity import invalid_shares, share_mask
from advaudit.audits.tsne_plot import tsne_plot
from advaudit.audits.worst_case_markdown import markdown
from advaudit.audits.worst_case_fresh import WorstCases, fresh_count, read_fresh_conditions, worst_cases
from advaudit.audits.worst_case_history import load_history
from advaudit.audits.worst_case_record import ExaminationRecord
from advaudit.core.plots import image_grid, plt, save_figure
from advaudit.models.targets.tracking import open_wandb
from advaudit.core.intervals import mean_with_ci
from advaudit.worlds.protocol import factor_to_unit
from advaudit.audits.settings import Mode


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
        result.update(_with_ci(f"examine/E_T_valid@{b}", metrics.e_t_valid(p, valid, q, b), seed))
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
            low, high = column_percentile(curve, 10), column_percentile(curve, 90)
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


def column_percentile(values: np.ndarray, q: float) -> np.ndarray:
    """``np.nanpercentile(values, q, axis=0)`` of ``values`` ``[n, m]`` (linear interpolation, NaNs left out, NaN for
    an all-NaN column), in one sort: numpy's loops over the columns in Python when any value is NaN (2 s for the
    2,000 columns of 80 instances x 2,000 queries)."""
    ordered = np.sort(values, 0)                                  # NaNs last
    count = np.isfinite(values).sum(0)
    position = (np.maximum(count, 1) - 1) * q / 100
    below = np.floor(position).astype(int)
    above = np.minimum(below + 1, np.maximum(count, 1) - 1)
    columns = np.arange(values.shape[1])
    low, high = ordered[below, columns], ordered[above, columns]
    return np.where(count > 0, low + (high - low) * (position - below), np.nan)


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


def summarise_and_report(ex: ExaminationRecord, seconds: float, q: int, budgets: list[int],
                         history: dict[str, Any] | None = None) -> dict[str, Any]:
    """The examination's result from its records (``steps.jsonl``, or its ``history`` when read already, and
    ``fresh_conditions.pt`` in ``ex.out``): the metrics at each budget, the plots, ``report.md`` and the W&B log.
    ``ex`` is what the examination was set up with (:class:`advaudit.audits.worst_case_record.ExaminationRecord`);
    nothing is rendered or queried here, and neither the target nor the world is needed."""
    out = Path(ex.out)
    history = load_history(out, len(ex.labels)) if history is None else history
    fresh = read_fresh_conditions(out)
    result = summarise(ex, history, fresh, seconds, q, budgets)
    plots = _plots(ex, history, fresh, result["per_class"], q)
    result["plots"] = {key: str(path) for key, path in plots.items()}
    report = out / "report.md"
    report.write_text(markdown(ex.cfg, ex.audit, result, plots, ex.endpoint))
    result["report"] = str(report)
    _log(ex.cfg, result, plots, history["true_prob"], q)
    return result


def summarise(ex: ExaminationRecord, history: dict[str, Any], fresh: dict[str, Any], seconds: float, q: int,
              budgets: list[int]) -> dict[str, Any]:
    """The numbers of ``result.json`` (all but ``plots`` and ``report``) from the history and the fresh record."""
    audit, seed = ex.audit, int(ex.cfg.seed)
    strength = audit.mode == Mode.strength
    labels = ex.labels
    queries = history["true_prob"].shape[1]
    budgets = [b for b in budgets if b <= queries]
    result = examination_metrics(history, labels, q, budgets, strength, seed, share_rate(audit))
    result["budget_unit"] = audit.budget_unit.value
    result["instance_selection"] = selection_design(audit.selection.value)
    worst = worst_cases(history, strength)
    result["per_instance"] = _per_instance(ex, history, worst, fresh, q, seed)
    final = {key: np.array([row[key] if row[key] is not None else np.nan for row in result["per_instance"]], float)
             for key in ("E_T", "E_T_valid")}
    moved = examination_movement(final, fresh, strength, str(ex.cfg.examiner.name), seed)
    for row, baseline in zip(result["per_instance"], moved.pop("random_baseline_valid")):
        row["E_T_valid_random"] = None if np.isnan(baseline) else float(baseline)
    result.update(moved)
    result.update(_final_factors(ex, history, fresh, q))
    result.update(label_kept(history, q, worst, fresh, audit.judge, seed))
    for row, correct in zip(result["per_instance"], _judge_correct(worst, fresh)):
        row["judge_correct"] = correct
    random_ok, random_valid = fresh["random_ok"].numpy(), fresh["random_valid"].numpy()
    result.update({
        "examine/random_accuracy": float(random_ok.mean()),
        "examine/random_valid_accuracy": float(random_ok[random_valid].mean()) if random_valid.any() else None,
        "examine/random_invalid_share": float(1 - random_valid.mean()),
        "world_box": {f.name: [float(f.low), float(f.high)] for f in ex.factors},
        "validity_checks": ex.checks,
        "validity_reference": ex.reference_path,
        "validity_reference_min_prob": ex.min_prob,
        "class_alignment": ex.class_alignment,
        "per_class": _per_class(ex, history, q),
        "n_instances": int(len(labels)), "queries_per_instance": int(queries),
        # over every invocation of a resumed or extended run; None where a resumed checkpoint predates the count
        "queries_per_second": float(len(labels) * queries / seconds) if seconds > 0 else None,
        "seconds_examination": round(seconds, 2) if math.isfinite(seconds) else None,
    })
    return result


def share_rate(audit: Any) -> float:
    """The share of queries the invalid shares are measured on: all of them where the examiner was told every
    proposal's verdict (``audit.validity.in_loss=barrier``), else ``audit.validity.share_sample`` (lazy and eager
    judging then give the same result)."""
    return 1.0 if audit.validity.in_loss.value == "barrier" else audit.validity.share_sample


def _per_class(ex: ExaminationRecord, history: dict[str, Any], q: int) -> dict[str, dict[str, Any]]:
    """Per class present among the instances: ``E_T``, ``worst``, ``T0`` (E_T before any query), ``failure_rate``, ``n``."""
    true_prob, labels = history["true_prob"], ex.labels
    queries = true_prob.shape[1]
    names = ex.class_names
    e_final = metrics.e_t(true_prob, q, queries)
    worst_final = metrics.worst(true_prob, history["valid"], queries, ex.audit.mode == Mode.strength)
    failed = metrics.failed(history["predicted"], history["valid"], labels, queries)
    first = metrics.e_t(true_prob, q, 0)
    rows = {}
    for c in sorted(set(labels.tolist())):
        mine = labels == c
        rows[names[c]] = {"E_T": float(e_final[mine].mean()),
                          "worst": float(np.nanmean(worst_final[mine])) if np.isfinite(worst_final[mine]).any() else None,
                          "T0": float(first[mine].mean()), "failure_rate": float(failed[mine].mean()), "n": int(mine.sum())}
    return rows


def _per_instance(ex: ExaminationRecord, history: dict[str, Any], worst: WorstCases, fresh: dict[str, Any], q: int,
                  seed: int) -> list[dict[str, Any]]:
    """One row per instance: its E_T, worst valid true-class probability, failure, invalid share, worst case and
    accuracy under the run's random conditions (all of them, and the valid ones: the same conditions for every
    checkpoint examined alike, so a comparison pairs them instance by instance)."""
    true_prob, labels = history["true_prob"], ex.labels
    queries = true_prob.shape[1]
    names = ex.class_names  # the world's classes in its order (+ a class map's "(other)", predicted too)
    e_final = metrics.e_t(true_prob, q, queries)
    e_valid = metrics.e_t_valid(true_prob, history["valid"], q, queries)
    worst_final = metrics.worst(true_prob, history["valid"], queries, ex.audit.mode == Mode.strength)
    failed = metrics.failed(history["predicted"], history["valid"], labels, queries)
    shares = invalid_shares(history, share_mask(history, seed, share_rate(ex.audit)))["per_instance"]
    factor_names = [f.name for f in ex.factors]
    random_ok, random_valid = (fresh[key].numpy().reshape(len(labels), -1) for key in ("random_ok", "random_valid"))
    return [{"instance": int(history["ids"][i]), "label": int(labels[i]), "class": names[labels[i]],
             "random_accuracy": float(random_ok[i].mean()),
             "random_valid_accuracy": float(random_ok[i][random_valid[i]].mean()) if random_valid[i].any() else None,
             "E_T": float(e_final[i]), "E_T_valid": None if np.isnan(e_valid[i]) else float(e_valid[i]),
             "worst": None if np.isnan(worst_final[i]) else float(worst_final[i]),
             "failed": bool(failed[i]), "invalid_share": float(shares[i]),
             "worst_predicted": names[worst.predicted[i]] if worst.found[i] else None,
             "worst_s": dict(zip(factor_names, worst.s[i].tolist())) if worst.found[i] else None}
            for i in range(len(labels))]


def _final_factors(ex: ExaminationRecord, history: dict[str, Any], fresh: dict[str, Any], q: int) -> dict[str, Any]:
    """Where the last iteration's proposals ended up: each searched factor's mean and spread, and with
    ``audit.factor_share`` the share outside ``abs_above`` there and under the random conditions."""
    k = fresh_count(q, history["true_prob"].shape[1])
    final_s = history["s"][:, -k:].reshape(-1, history["s"].shape[-1])
    result: dict[str, Any] = {"final_factors": {f.name: factor_summary(final_s[:, i], f)
                                                for i, f in enumerate(ex.factors) if i in ex.free}}
    share = ex.audit.factor_share
    if share:
        column = [f.name for f in ex.factors].index(share["factor"])
        threshold = float(share["abs_above"])
        result["examine/share_outside_final"] = float((np.abs(final_s[:, column]) > threshold).mean())
        result["examine/share_outside_random"] = float((fresh["random_s"][..., column].abs() > threshold).float().mean())
    return result


def _plots(ex: ExaminationRecord, history: dict[str, Any], fresh: dict[str, Any], per_class: dict[str, Any], q: int) -> dict[str, Path]:
    """The report's figures in the run dir: curves, per-class bars, the worst-case gallery and (from 6 final
    proposals on) the t-SNE of final against random conditions."""
    out, seed = Path(ex.out), int(ex.cfg.seed)
    strength = ex.audit.mode == Mode.strength
    true_prob, labels = history["true_prob"], ex.labels
    names = ex.class_names
    worst = worst_cases(history, strength)
    titles = [f"{names[labels[i]]}: p={true_prob[i, worst.safe[i]]:.2f}\npred {names[worst.predicted[i]]}"
              + ("" if worst.found[i] else " (no valid)") for i in range(len(labels))]
    plots = {
        "curve": _curve_plot(history, q, strength, out / "true_prob_vs_queries.png",
                             f"{ex.cfg.examiner.name}: {'strength' if strength else 'weakness'} search"),
        "per_class": _class_bars({c: v["E_T"] for c, v in per_class.items()},
                                 {c: v["T0"] for c, v in per_class.items()}, out / "per_class.png"),
        "gallery": image_grid(fresh["gallery"], out / "worst_cases.png", titles=titles, columns=min(8, len(labels))),
    }
    k = fresh_count(q, true_prob.shape[1])
    final_u = space_unit(ex, history["s"][:, -k:]).reshape(-1, len(ex.free))
    final_ok = (history["predicted"][:, -k:] == labels[:, None]).reshape(-1)
    if len(final_u) >= 6:
        plots["tsne"] = tsne_plot(final_u, final_ok, fresh["random_free"].reshape(-1, len(ex.free)).numpy(),
                                  fresh["random_ok"].numpy(), out / "tsne.png", seed)
    return plots


def _log(cfg: DictConfig, result: dict[str, Any], plots: dict[str, Path], true_prob: np.ndarray, q: int) -> None:
    """The E_T curve, the headline numbers, the plots and the per-instance table to W&B (when a logger is set)."""
    queries = true_prob.shape[1]
    with open_wandb(cfg, job_type="examine", name=f"worst_case-{cfg.examiner.name}") as wb:
        for t, value in enumerate(metrics.e_t_curve(true_prob, q).mean(0)):
            wb.log({"examine/E_T_curve": float(value), "examine/iteration": t + 1,
                    "examine/queries": min((t + 1) * q, queries)})
        wb.log({k: v for k, v in result.items() if k.startswith("examine/") and isinstance(v, (int, float))})
        for key, path in plots.items():
            wb.log_image(f"examine/{key}", path)
        wb.log_table("examine/per_instance", [{**{k: v for k, v in w.items() if k != "worst_s"}, **(w["worst_s"] or {})}
                                              for w in result["per_instance"]])


def label_kept(history: dict[str, Any], q: int, worst: WorstCases, fresh: dict[str, Any], judge_path: Any,
               seed: int) -> dict[str, Any]:
    """Validity where it matters: on the examiner's worst cases, not on random conditions.

    - ``examine/worst_raw_valid``: share of instances whose lowest true-class probability over *all*
      proposals (valid or not) was on a condition that passes the validity checks (1 - this share is
      how often the examiner's best find was a view the checks throw out);
    - ``examine/final_invalid_share``: share of the last iteration's proposals that fail a check
      (where the examiner ended up), next to ``examine/random_invalid_share``;
    - with ``audit.judge`` (an independent strong model, used for nothing else; its verdicts are in the
      fresh record): ``examine/judge_correct_worst`` (+ ``/lo``, ``/hi``), the share of the instances'
      worst valid cases the judge still classifies correctly, and ``examine/judge_correct_random``, its
      accuracy on random conditions of the same instances.
    """
    p, valid = history["true_prob"], history["valid"]
    raw_worst = p.argmin(1)
    last = p.shape[1] - (((p.shape[1] - 1) % q) + 1)
    out: dict[str, Any] = {"examine/worst_raw_valid": float(valid[np.arange(len(p)), raw_worst].mean()),
                           "examine/final_invalid_share": float(1 - valid[:, last:].mean())}
    if not judge_path:
        return out
    correct = fresh["judge_worst"].numpy()[worst.found].astype(float)
    out.update(_with_ci("examine/judge_correct_worst", correct, seed) if len(correct) else {})
    out["examine/judge_correct_random"] = float(fresh["judge_random"].float().mean())
    out["judge"] = str(judge_path)
    return out


def _judge_correct(worst: WorstCases, fresh: dict[str, Any]) -> list[bool | None]:
    """Per instance ``[N]``: whether the judge names its worst valid case correctly (None without a judge or
    without a valid proposal)."""
    if "judge_worst" not in fresh:
        return [None] * len(worst.index)
    verdicts = fresh["judge_worst"].tolist()
    return [bool(verdicts[i]) if worst.found[i] else None for i in range(len(worst.index))]


def factor_summary(values: np.ndarray, factor: Any) -> dict[str, Any]:
    """Mean and spread of one factor's values; on a circle the circular mean and standard deviation
    (350 and 10 deg average to 0 deg, not 180)."""
    if getattr(factor, "periodic", False):
        from scipy.stats import circmean, circstd  # scipy.stats is slow to import; only this statistic needs it

        return {"mean": float(circmean(values, high=factor.high, low=factor.low)),
                "std": float(circstd(values, high=factor.high, low=factor.low)), "circular": True}
    return {"mean": float(values.mean()), "std": float(values.std())}


def space_unit(space: Any, s: np.ndarray) -> np.ndarray:
    """Searched factors of ``s`` ``[..., C]`` (factor units) mapped to the unit cube ``[..., C_free]``; ``space``
    names them (``free``, ``free_factors``: a :class:`ConditionSpace` or an :class:`ExaminationRecord`)."""
    free = torch.as_tensor(s, dtype=torch.float32)[..., space.free]
    return factor_to_unit(free, space.free_factors).numpy()
