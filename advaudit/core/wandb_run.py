"""W&B runs for a team, that never need a network: offline by default, ``disabled`` honoured.

Mode comes from ``cfg.logger.wandb.mode`` (which defaults to ``${oc.env:WANDB_MODE,offline}``) so
one job of a multirun never leaks its mode into the next (unlike ``WandbLogger(offline=True)``).

Every run, training runs (Lightning's ``WandbLogger``, completed by
:func:`advaudit.models.targets.tracking.track_training_run` and :func:`~advaudit.models.targets.tracking.finish_training_run`)
as well as audits (:func:`advaudit.models.targets.tracking.open_wandb`), is set up so a team can compare runs
in W&B's run table:

- ``group`` = the multirun's id (``<task>-<sweep folder>``; the task name for a single run), so a
  sweep's jobs sit together; ``job_type`` = the audit's name (``audit.name``);
- ``tags`` from the config (``tags``, the audit, the examiner or search method, the seed);
- the RESOLVED config (no ``${seed}``-style strings), and the headline numbers in the summary;
- lineage: a training run logs its checkpoint as an output and every audit declares the checkpoint
  under audit (and the generator, for fault tests) an input, as a W&B model Artifact carrying its
  metadata (architecture, classes, input shape, dataset, training metrics), so W&B links every
  audit of a checkpoint to the run that trained it (:mod:`advaudit.models.targets.tracking`, which reads
  the checkpoints; this module never does).

Offline runs keep all of this in ``<run dir>/wandb/offline-run-*`` and ``wandb sync`` uploads it
later; :mod:`advaudit.report.wandb_offline` reads those files back.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.config.audit_card import card_of


def sweep_id() -> str | None:
    """``<sweep folder name>`` when running inside a Hydra multirun, else None."""
    try:
        if not HydraConfig.initialized():
            return None
        hydra_cfg = HydraConfig.get()
        if hydra_cfg.mode != RunMode.MULTIRUN:
            return None
        return Path(str(hydra_cfg.sweep.dir)).name
    except Exception:  # no Hydra (library use, tests): not a sweep
        return None


def run_group(task_name: str) -> str:
    """The W&B group of this job: ``<task>-<sweep id>`` in a multirun, else ``<task>``."""
    sweep = sweep_id()
    return f"{task_name}-{sweep}" if sweep else task_name


def wandb_settings(cfg: DictConfig) -> dict[str, Any]:
    """The W&B options of ``cfg.logger.wandb`` (with defaults when the logger group is absent).

    Only the keys used here are resolved, so a config whose other values need Hydra's runtime
    (``${hydra:...}``, e.g. at the end of a multirun) still gives its settings.
    """
    logger = OmegaConf.select(cfg, "logger.wandb", default=None)

    def option(key: str) -> Any:
        if logger is None:
            return None
        value = OmegaConf.select(logger, key, default=None, throw_on_resolution_failure=False)
        return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value

    mode = option("mode") or os.environ.get("WANDB_MODE", "offline")
    if logger is None and OmegaConf.select(cfg, "logger", default=None) is not None:
        mode = "disabled"  # a logger group without wandb (logger=none / csv) means: no W&B
    task = str(OmegaConf.select(cfg, "task_name", default=None, throw_on_resolution_failure=False) or "advaudit")
    return {"project": option("project") or "advaudit", "mode": mode, "group": option("group") or run_group(task),
            "tags": [str(t) for t in option("tags") or []]}


def run_tags(cfg: DictConfig, base: list[str]) -> list[str]:
    """``base`` tags plus the audit, its method (the config value at its card's ``method`` key: the examiner or
    search method), the model and the seed."""
    audit = OmegaConf.select(cfg, "audit.name", default=None)
    card = card_of(audit)   # filed when the audit's settings were defined (the run's config was composed from them)
    method_key = card.method if card is not None else None
    values = [audit, OmegaConf.select(cfg, method_key, default=None) if method_key else None,
              OmegaConf.select(cfg, "model.name", default=None)]
    seed = OmegaConf.select(cfg, "seed", default=None)
    tags = [*base, *(str(v) for v in values if v is not None), *([f"seed={seed}"] if seed is not None else [])]
    return list(dict.fromkeys(t[:64] for t in tags if t))  # W&B tags are at most 64 characters


def resolved_config(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    """``cfg`` as resolved plain data, without the hydra node (unresolvable values kept as written)."""
    if not isinstance(cfg, DictConfig):
        return {k: v for k, v in dict(cfg).items() if k != "hydra"}
    try:
        container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    except Exception:  # an interpolation that only resolves inside Hydra (e.g. ${hydra:...})
        container = OmegaConf.to_container(cfg, resolve=False)
    container.pop("hydra", None)  # type: ignore[union-attr]
    return container  # type: ignore[return-value]


class NullRun:
    """Stands in for a W&B run when W&B is disabled."""

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        pass

    def log_image(self, key: str, path: str | Path) -> None:
        pass

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        pass

    def set_summary(self, data: Mapping[str, Any]) -> None:
        pass


class LoggedRun(NullRun):
    """A W&B run behind :class:`NullRun`'s four methods."""

    def __init__(self, run: Any) -> None:
        self.run = run

    def log(self, data: dict[str, Any], step: int | None = None) -> None:
        self.run.log(data, step=step)
        self.set_summary({k: v for k, v in data.items() if "/" in k})

    def log_image(self, key: str, path: str | Path) -> None:
        import wandb  # W&B is imported only by a run that logs (it is slow to import)

        self.run.log({key: wandb.Image(str(path))})

    def log_table(self, key: str, rows: list[dict[str, Any]]) -> None:
        import wandb  # W&B is imported only by a run that logs (it is slow to import)

        if rows:
            columns = list(dict.fromkeys(c for r in rows for c in r))
            self.run.log({key: wandb.Table(columns=columns, data=[[_cell(r.get(c)) for c in columns] for r in rows])})

    def set_summary(self, data: Mapping[str, Any]) -> None:
        """Headline numbers in the run's summary (the columns of W&B's run table)."""
        for key, value in data.items():
            if isinstance(value, (int, float, str)) and not isinstance(value, bool) or value is None:
                self.run.summary[key] = value


def _cell(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


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


def finish_any_wandb_run() -> None:
    """Close a W&B run left open (e.g. by Lightning's logger after an exception)."""
    try:
        import wandb  # only to close a run some code opened: W&B is then imported already

        if wandb.run is not None:
            wandb.finish(exit_code=1)
    except Exception:  # never mask the original error
        pass
