"""The comparison in W&B: its tables and figures, the page itself, and the report as an artifact.

:func:`log_comparison` reads the summary :func:`advaudit.compare.report.compare_records` returns (the object
``comparison.json`` holds and :mod:`advaudit.compare.render.markdown` lays out): each group's answers (the
stored sentences, primary verdicts first, as in ``comparison.md``), its tables and figures, the why section's
gap by intervention, and ``comparison.html`` as one W&B HTML panel. The run is set up as every advaudit run
is (:mod:`advaudit.core.wandb_run`: offline by default, its sweep's group).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from omegaconf import DictConfig, OmegaConf

from advaudit.core.wandb_run import LoggedRun, run_group, wandb_settings


def log_comparison(summary: dict[str, Any], out: Path, config: DictConfig | Mapping[str, Any] | None = None,
                   sweep_id: str | None = None, declare_inputs: Callable[[Any], Any] | None = None) -> None:
    """Log a comparison (``advaudit.compare``) to W&B: tables and images, its inputs and its report.

    The run is the one already active in this process (a comparison called from Python inside a W&B
    run logs there and leaves it open), else a new ``compare`` run in its sweep's group.
    ``declare_inputs(run)`` declares what the comparison read (the audited checkpoints or endpoints
    and the audit runs: :func:`advaudit.models.targets.tracking.declare_comparison_inputs`); the report
    (comparison.html / .json / .md and gate.xml where a gate wrote one) is logged as the run's output
    artifact of type ``comparison``. Offline, all of it waits in the run's files for ``wandb sync``.
    """
    cfg = config if isinstance(config, DictConfig) else OmegaConf.create(dict(config or {}))
    settings = wandb_settings(cfg)
    loaded = sys.modules.get("wandb")  # a run the caller opened means W&B is imported already
    own = loaded is None or getattr(loaded, "run", None) is None
    if own and settings["mode"] == "disabled":
        return
    import wandb  # not imported at all when W&B is disabled and no run is active

    task = str(OmegaConf.select(cfg, "task_name", default="examine") or "examine")
    # the sweep's group: the one its jobs were given (logger.wandb.group, e.g. one group for a
    # whole demo), else <task>-<sweep id> as the jobs' default resolver gives it inside Hydra
    default = settings["group"] in (task, run_group(task))
    group = f"{task}-{sweep_id}" if sweep_id and default else settings["group"]
    run = wandb.init(project=settings["project"], mode=settings["mode"], group=group, job_type="compare",
                     name=f"compare-{sweep_id}" if sweep_id else "compare", dir=str(out), tags=settings["tags"],
                     config={"runs": summary["runs"], "failed": len(summary["failed"])},
                     reinit="finish_previous") if own else wandb.run
    failed = True
    try:
        if declare_inputs is not None:
            declare_inputs(run)
        _log_comparison_tables(LoggedRun(run), summary)
        if summary.get("files", {}).get("html"):  # the whole page, as a person reads it
            run.log({"compare/report": wandb.Html(Path(summary["files"]["html"]).read_text())})
        run.log_artifact(report_artifact(summary, out))
        failed = False
    finally:
        if own:
            run.finish(exit_code=1 if failed else 0)


def report_artifact(summary: dict[str, Any], out: Path) -> Any:
    """The comparison's report as a W&B Artifact (type ``comparison``): HTML, JSON, Markdown, gate.xml."""
    import wandb  # called by log_comparison only, with W&B imported

    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in str(Path(out).resolve()).strip("/"))[-100:]
    artifact = wandb.Artifact(f"comparison-{slug}".strip("-"), type="comparison",
                              metadata={"runs": summary["runs"], "failed": len(summary["failed"]),
                                        "groups": [g["label"] for g in summary["groups"]]},
                              description="advaudit comparison report (python -m advaudit.compare)")
    files = summary.get("files", {})
    for path in [files.get("html"), files.get("json"), files.get("md"), str(Path(out) / "gate.xml")]:
        if path and Path(path).is_file():
            artifact.add_file(str(path), name=Path(path).name)
    return artifact


def _log_comparison_tables(logged: LoggedRun, summary: dict[str, Any]) -> None:
    """Each group's tables (primary verdicts first, as in comparison.md) and figures."""
    for group in summary["groups"]:
        slug = group["slug"]
        logged.log_table(f"compare/{slug}/answer", [
            {"pair": f"{a['a']} | {a['b']}", "metric": a["metric"], "relation": "primary", "status": a["status"],
             "text": a["text"]} for a in group.get("answers", [])] + [
            {"pair": f"{a['a']} | {a['b']}", "metric": a["metric"], "relation": "why", "status": "",
             "text": a["why"]} for a in group.get("answers", []) if a.get("why")] + [
            {"pair": f"{a['a']} | {a['b']}", "metric": s["metric"], "relation": s["relation"], "status": "",
             "text": s["text"]} for a in group.get("answers", []) for s in a["secondary"]])
        for table in ("checkpoints", "pairs", "per_class"):
            logged.log_table(f"compare/{slug}/{table}", group.get(table) or [])
        logged.log_table(f"compare/{slug}/per_factor", [{k: v for k, v in r.items() if k != "values"}
                                                        for r in group.get("per_factor") or []])
        why = group.get("why") or {}
        if why.get("pairs"):   # the gap by intervention: one row per pair and intervention
            logged.log_table(f"compare/{slug}/why", [
                {"pair": f"{p['a']} | {p['b']}", "design": p["design"], "gap": p["gap"]["diff"],
                 "intervention": r["name"], "factors": ", ".join(r["factors"]), "explained": r["diff"],
                 "lo": r["lo"], "hi": r["hi"], "p_holm": r["p_holm"], "said": r["said"], "relation": r["relation"],
                 "headline": r["name"] == p.get("headline")} for p in why["pairs"] for r in p["rows"]])
        if "replay" in group:
            transfer = group["replay"]["transfer"]
            logged.log_table(f"compare/{slug}/replay", [{"worst_conditions_of": a, **transfer[a]} for a in transfer])
        for key, path in group["plots"].items():
            logged.log_image(f"compare/{slug}/{key}", path)
    logged.log_table("compare/failed", summary["failed"])
