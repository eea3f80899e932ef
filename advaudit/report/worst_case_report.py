"""Summaries, plots and the Markdown report of a worst-case examination (from steps.jsonl).

Plots (PNG in the run dir and W&B): mean true-class probability vs queries with per-instance
spread (paper Fig. 1), per-class bars at the budget (Fig. 2), t-SNE of final examples against
random ones with correct/incorrect marked (Figs. 3, 4, 6), and the worst case of every instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from advaudit.audits.instance_selection import true_class_prob
from advaudit.report.plots import image_grid, plt, save_figure
from advaudit.report.records import read_jsonl
from advaudit.report.wandb_run import open_wandb


def load_history(out: Path, n: int) -> dict[str, np.ndarray]:
    """Per-instance arrays in query order: ``true_prob`` ``[N, Q]``, ``predicted`` ``[N, Q]``,
    ``s`` ``[N, Q, C]`` (factor units)."""
    records = sorted(read_jsonl(out / "steps.jsonl"), key=lambda r: r["step"])
    order: dict[int, list[dict]] = {}
    for r in records:
        order.setdefault(r["instance"], []).append(r)
    ids = list(order)[:n]
    stack = lambda key: np.stack([np.concatenate([np.asarray(r[key]) for r in order[i]]) for i in ids])  # noqa: E731
    return {"ids": np.asarray(ids), "true_prob": stack("true_prob"), "predicted": stack("predicted"),
            "s": stack("s"), "q": len(records[0]["true_prob"])}


def best_so_far(true_prob: np.ndarray, strength: bool) -> np.ndarray:
    """Running min (weakness) or max (strength) of ``[N, Q]`` along queries."""
    return np.maximum.accumulate(true_prob, 1) if strength else np.minimum.accumulate(true_prob, 1)


def e_at(curve: np.ndarray, true_prob: np.ndarray, budget: int) -> np.ndarray:
    """Per-instance value at ``budget`` queries (0 = the first query, before any adaptation)."""
    if budget <= 0:
        return true_prob[:, 0]
    return curve[:, min(budget, curve.shape[1]) - 1]


def _curve_plot(curve: np.ndarray, path: Path, title: str) -> Path:
    x = np.arange(1, curve.shape[1] + 1)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for row in curve:
        ax.plot(x, row, color="tab:blue", alpha=0.12, linewidth=0.7)
    ax.fill_between(x, np.percentile(curve, 10, 0), np.percentile(curve, 90, 0), color="tab:blue", alpha=0.2,
                    label="10-90% of instances")
    ax.plot(x, curve.mean(0), color="tab:blue", linewidth=2, label="mean")
    ax.set_xscale("log")
    ax.set_xlabel("queries per instance")
    ax.set_ylabel("true-class probability (best found)")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize=7)
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


def _tsne_plot(final_u: np.ndarray, final_ok: np.ndarray, random_u: np.ndarray, random_ok: np.ndarray,
               path: Path, seed: int) -> Path:
    from sklearn.manifold import TSNE

    points = np.concatenate([final_u, random_u])
    perplexity = float(max(2, min(30, (len(points) - 1) // 3)))
    embedded = TSNE(n_components=2, perplexity=perplexity, random_state=seed, init="pca").fit_transform(points)
    fig, ax = plt.subplots(figsize=(4.5, 4.2))
    n = len(final_u)
    for (lo, hi, ok, color, label) in ((0, n, final_ok, "tab:red", "examiner"), (n, len(points), random_ok, "tab:blue", "random")):
        e = embedded[lo:hi]
        ax.scatter(e[ok, 0], e[ok, 1], s=12, color=color, alpha=0.2, label=f"{label}, correct")
        ax.scatter(e[~ok, 0], e[~ok, 1], s=16, color=color, alpha=0.95, marker="x", label=f"{label}, wrong")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title("t-SNE of conditions (unit cube)")
    ax.legend(fontsize=6)
    return save_figure(fig, path)


def summarise_and_report(cfg: DictConfig, world: Any, target: Any, z: Any, space: Any, out: Path,
                         seconds: float, calibrated: bool) -> dict[str, Any]:
    """Compute E at each budget, draw the plots, write report.md, log to W&B; return the result."""
    audit = cfg.audit
    strength = audit.mode == "strength"
    history = load_history(out, len(z))
    true_prob, q = history["true_prob"], history["q"]
    curve = best_so_far(true_prob, strength)
    queries = true_prob.shape[1]
    budgets = sorted({int(b) for b in audit.report_budgets if int(b) <= queries} | {queries})
    names = world.class_names
    labels = z.labels.cpu().numpy()
    result: dict[str, Any] = {f"examine/E@{b}": float(e_at(curve, true_prob, b).mean()) for b in budgets}
    result["examine/true_prob"] = result[f"examine/E@{queries}"]
    result["examine/final_true_prob"] = float(true_prob[:, -q:].mean())  # the paper's l_i^T
    worst_index = (true_prob.argmax(1) if strength else true_prob.argmin(1))
    worst_pred = history["predicted"][np.arange(len(labels)), worst_index]
    result["examine/failure_rate"] = float((worst_pred != labels).mean())
    at_budget = e_at(curve, true_prob, queries)
    first = true_prob[:, 0]
    present = sorted(set(labels.tolist()))
    per_class = {names[c]: float(at_budget[labels == c].mean()) for c in present}
    per_class_first = {names[c]: float(first[labels == c].mean()) for c in present}

    # worst-case gallery
    worst_s = torch.as_tensor(history["s"][np.arange(len(labels)), worst_index], dtype=torch.float32)
    images = world.render(z, worst_s.unsqueeze(1).to(getattr(world, "device", "cpu"))).cpu()
    short = {f.name: f.name.replace("camera_", "cam_").replace("light_", "lt_") for f in world.factors}
    titles = [f"{names[labels[i]]}: p={true_prob[i, worst_index[i]]:.2f}\npred {names[worst_pred[i]]}"
              for i in range(len(labels))]
    plots = {
        "curve": _curve_plot(curve, out / "true_prob_vs_queries.png",
                             f"{cfg.examiner.name}: {'strength' if strength else 'weakness'} search"),
        "per_class": _class_bars(per_class, per_class_first, out / "per_class.png"),
        "gallery": image_grid(images, out / "worst_cases.png", titles=titles, columns=min(8, len(labels))),
    }
    # t-SNE: each instance's final examples vs random conditions, correct/incorrect marked
    generator = torch.Generator().manual_seed(int(cfg.seed) + 7)
    k = min(5, queries)
    final_u = space_unit(space, history["s"][:, -k:]).reshape(-1, len(space.free))
    final_ok = (history["predicted"][:, -k:] == labels[:, None]).reshape(-1)
    random_free = torch.rand(len(labels), k, len(space.free), generator=generator)
    random_s = space.assemble(random_free)
    random_x = world.render(z, random_s.to(getattr(world, "device", "cpu")))
    random_p = target.predict_proba(random_x, calibrated=calibrated).argmax(1).cpu().numpy()
    random_ok = random_p == np.repeat(labels, k)
    if len(final_u) >= 6:
        plots["tsne"] = _tsne_plot(final_u, final_ok, random_free.reshape(-1, len(space.free)).numpy(), random_ok,
                                   out / "tsne.png", int(cfg.seed))
    final_s = history["s"][:, -k:].reshape(-1, history["s"].shape[-1])
    result["final_factors"] = {f.name: {"mean": float(final_s[:, i].mean()), "std": float(final_s[:, i].std())}
                               for i, f in enumerate(world.factors) if i in space.free}
    share = audit.get("factor_share")
    if share:
        column = [f.name for f in world.factors].index(share["factor"])
        threshold = float(share["abs_above"])
        result["examine/share_outside_final"] = float((np.abs(final_s[:, column]) > threshold).mean())
        result["examine/share_outside_random"] = float((random_s[..., column].abs() > threshold).float().mean())
    result.update({
        "examine/random_accuracy": float(random_ok.mean()),
        "per_class": per_class, "per_class_T0": per_class_first,
        "n_instances": int(len(labels)), "queries_per_instance": int(queries),
        "queries_per_second": float(len(labels) * queries / max(seconds, 1e-9)) if seconds > 0 else None,
        "seconds_examination": round(seconds, 2),
        "worst_cases": [{"instance": int(history["ids"][i]), "class": names[labels[i]],
                         "true_prob": float(true_prob[i, worst_index[i]]), "predicted": names[worst_pred[i]],
                         "s": {f.name: float(v) for f, v in zip(world.factors, worst_s[i].tolist())}}
                        for i in range(len(labels))],
        "plots": {k2: str(v) for k2, v in plots.items()},
    })
    report = out / "report.md"
    report.write_text(_markdown(cfg, result, budgets, plots))
    result["report"] = str(report)
    with open_wandb(cfg, job_type="examine", name=f"worst_case-{cfg.examiner.name}") as wb:
        mean_curve = curve.mean(0)
        for t in range(0, queries, max(1, queries // 200)):
            wb.log({"examine/true_prob_curve": float(mean_curve[t]), "examine/queries": t + 1})
        wb.log({k2: v for k2, v in result.items() if k2.startswith("examine/")})
        for key, path in plots.items():
            wb.log_image(f"examine/{key}", path)
        wb.log_table("examine/worst_cases", [{**{k2: v for k2, v in w.items() if k2 != "s"}, **w["s"]}
                                              for w in result["worst_cases"]])
    return result


def space_unit(space: Any, s: np.ndarray) -> np.ndarray:
    """Searched factors of ``s`` ``[..., C]`` (factor units) mapped to the unit cube ``[..., C_free]``."""
    from advaudit.worlds.protocol import factor_to_unit

    free = torch.as_tensor(s, dtype=torch.float32)[..., space.free]
    return factor_to_unit(free, space.free_factors).numpy()


def _markdown(cfg: DictConfig, result: dict[str, Any], budgets: list[int], plots: dict[str, Path]) -> str:
    rows = "\n".join(f"| {b} | {result[f'examine/E@{b}']:.4f} |" for b in budgets)
    classes = "\n".join(f"| {c} | {result['per_class_T0'][c]:.3f} | {v:.3f} |" for c, v in result["per_class"].items())
    worst = "\n".join(f"| {w['instance']} | {w['class']} | {w['true_prob']:.3f} | {w['predicted']} |"
                      for w in result["worst_cases"])
    images = "\n".join(f"![{k}]({Path(p).name})" for k, p in plots.items())
    return f"""# Worst-case audit

- target: `{cfg.target}`
- examiner: `{cfg.examiner.name}`, mode `{cfg.audit.mode}`, {result['n_instances']} instances,
  {result['queries_per_instance']} queries each ({result['queries_per_second'] or 0:.0f} queries/s)
- worst case misclassified for {100 * result['examine/failure_rate']:.1f}% of instances;
  accuracy under random conditions {100 * result['examine/random_accuracy']:.1f}%

| queries T | E (mean best-found true-class probability) |
|---|---|
{rows}

| class | T = 0 | after examination |
|---|---|---|
{classes}

| instance | class | worst true-class prob | predicted |
|---|---|---|---|
{worst}

{images}
"""
