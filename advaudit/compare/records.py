"""Run records for the comparison: every ``result.json`` under the given folders, read once.

A run folder holds ``result.json`` (successful runs: the audit's metrics plus ``config``, the
resolved config; failed runs: ``{"status": "failed", "error", "error_kind", "task", "config"}``).
Per-instance scores come from ``result["per_instance"]`` (an audit that keeps them in its result), else
``per_instance.csv`` beside it (an audit that writes them as a table), else, for runs of an audit whose card
says it searches a world (:class:`advaudit.config.audit_card.AuditCard`'s ``searches_world``) written before
``per_instance`` existed, from ``steps.jsonl``. Nothing here names an audit: what differs between audits is
read from their cards (:func:`advaudit.audits.cards.audit_card`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from advaudit.audits.cards import audit_card
from advaudit.compare.labels import distinct_labels, name_recipes
from advaudit.core.records import read_json, read_jsonl
from advaudit.errors import require
from advaudit.models.targets.imported.spec import target_label
from advaudit.worlds import build_world

PER_INSTANCE_CSV = "per_instance.csv"


@dataclass
class RunRecord:
    """One run: where it is, what it examined, its headline numbers and its status."""

    run_dir: Path
    status: str                      # "ok" | "failed"
    audit: str | None
    target: str | None
    seed: int | None
    config: dict[str, Any]
    result: dict[str, Any]
    error: str | None = None
    error_kind: str | None = None
    label_note: str | None = None     # set where the checkpoint's label was disambiguated (compare.labels)
    file_label: str | None = None     # the label the run gave its checkpoint, kept where --recipe renamed it
    _per_instance: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def metrics(self) -> dict[str, float]:
        """Numeric ``/``-named values of the result (``.../lo``/``.../hi`` included)."""
        return {k: float(v) for k, v in self.result.items()
                if "/" in k and isinstance(v, (int, float)) and not isinstance(v, bool)}

    def unresolved_config(self) -> dict[str, Any]:
        """The config as Hydra saved it before resolving (``.hydra/config.yaml``), else ``config``."""
        path = self.run_dir / ".hydra" / "config.yaml"
        if path.exists():
            try:
                return OmegaConf.to_container(OmegaConf.load(path), resolve=False)  # type: ignore[return-value]
            except Exception:  # unreadable: the resolved config is still a faithful record
                pass
        return self.config

    def per_instance(self) -> pd.DataFrame | None:
        """One row per examined instance (``instance``, ``label``, scores, ``failed``), or None."""
        if self._per_instance is None:
            self._per_instance = _read_per_instance(self)
        return self._per_instance


def discover_runs(roots: Iterable[str | Path], recipes: dict[str, str] | None = None) -> list[RunRecord]:
    """Every run under ``roots`` (run folders, multirun folders or ``result.json`` files), labelled
    (``recipes``: name -> shell pattern of checkpoint paths, :func:`advaudit.compare.labels.name_recipes`).

    Job folders of a multirun that hold no ``result.json`` (a job killed before it could write
    one) are returned as failed runs, so nothing is silently missing from a comparison.
    """
    records: list[RunRecord] = []
    seen: set[Path] = set()
    for root in roots:
        root = Path(root)
        require(root.exists(), f"{root} does not exist; pass run folders, multirun folders or result.json files")
        require(root.is_dir() or root.name == "result.json",
                f"{root} is neither a folder nor a result.json; pass run folders, multirun folders or result.json "
                "files (a shell pattern such as run_* also matches the runs' .log files: use run_*/)")
        files = [root] if root.is_file() else sorted(root.rglob("result.json"), key=_natural)
        for path in files:
            if path.parent.resolve() not in seen:
                seen.add(path.parent.resolve())
                records.append(read_run(path.parent))
        if root.is_dir():
            for hydra_dir in sorted(root.rglob(".hydra"), key=_natural):
                job = hydra_dir.parent
                if job.resolve() not in seen and not (job / "result.json").exists() and _is_job(job):
                    seen.add(job.resolve())
                    records.append(_missing_result(job))
    require(records, f"no result.json under {[str(r) for r in roots]}; pass the folders train.py / "
            "examine.py wrote (outputs/<task>/runs/... or outputs/<task>/multiruns/...)")
    if recipes:
        name_recipes(records, recipes)
    distinct_labels(records)
    return records


def _natural(path: Path) -> list[tuple[int, int, str]]:
    """Sort key that puts job 2 before job 10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in path.parts]


def read_run(run_dir: str | Path) -> RunRecord:
    """The record of one run folder (which must hold ``result.json``)."""
    run_dir = Path(run_dir)
    result = read_json(run_dir / "result.json")
    config = result.get("config") or {}
    status = str(result.get("status") or ("failed" if "error" in result else "ok"))
    audit = result.get("audit") or (config.get("audit") or {}).get("name")
    if (result.get("task") or config.get("task_name")) == "train":
        audit = "train"
    seed = config.get("seed")
    with_recorded_box(config, result.get("world_box"))
    return RunRecord(run_dir=run_dir, status=status, audit=audit,
                     target=result.get("target") or target_label(config.get("target")) or result.get("checkpoint"),
                     seed=int(seed) if isinstance(seed, (int, float)) else None, config=config, result=result,
                     error=result.get("error"), error_kind=result.get("error_kind"))


def with_recorded_box(config: dict[str, Any], box: dict[str, list[float]] | None) -> None:
    """Fill ``config["world"]["factors"]`` (in place) with the bounds the run searched, ``box`` as its
    ``result.json`` recorded them, under the factors its config set itself: a comparison then rebuilds
    the world the run saw, not today's default box. Worlds without a ``factors`` setting are left alone."""
    world = config.get("world")
    if not box or not isinstance(world, dict) or "factors" not in world:
        return
    world["factors"] = {**box, **(world.get("factors") or {})}


def _is_job(job: Path) -> bool:
    """A Hydra job folder (``.hydra/overrides.yaml``) that belongs to a multirun."""
    return (job / ".hydra" / "overrides.yaml").exists() and (job.parent / "multirun.yaml").exists()


def _missing_result(job: Path) -> RunRecord:
    config: dict[str, Any] = {}
    try:
        loaded = OmegaConf.load(job / ".hydra" / "config.yaml")
        config = OmegaConf.to_container(loaded, resolve=False)  # type: ignore[assignment]
    except Exception:  # an unreadable config is reported through the error below
        pass
    return RunRecord(run_dir=job, status="failed", audit=(config.get("audit") or {}).get("name"),
                     target=target_label(config.get("target")), seed=config.get("seed"), config=config, result={},
                     error="no result.json (the job was killed or crashed before writing it; see its log)",
                     error_kind="bug")


def _read_per_instance(record: RunRecord) -> pd.DataFrame | None:
    rows = record.result.get("per_instance")
    if isinstance(rows, list) and rows:
        frame = pd.DataFrame(rows)
    elif (record.run_dir / PER_INSTANCE_CSV).exists():
        frame = pd.read_csv(record.run_dir / PER_INSTANCE_CSV)
    elif _searches_world(record.audit) and (record.run_dir / "steps.jsonl").exists():
        frame = per_instance_from_steps(record.run_dir / "steps.jsonl", record.config)
    else:
        return None
    if "failed" in frame:
        frame["failed"] = frame["failed"].astype(bool)
    return frame.sort_values("instance").reset_index(drop=True)


def _searches_world(audit: str | None) -> bool:
    """Whether the audit's card says its runs search a world (their ``steps.jsonl`` holds every proposal)."""
    card = audit_card(audit)
    return bool(card and card.searches_world)


def per_instance_from_steps(steps_path: Path, config: dict[str, Any]) -> pd.DataFrame:
    """Per-instance E_T, worst and failure from a worst-case ``steps.jsonl`` (weakness mode).

    ``E_T`` is the mean true-class probability of the proposals of the last step (the paper's
    Algorithm-1 quantity at the full budget); ``worst`` the lowest true-class probability among
    valid proposals; ``failed`` whether a valid proposal was misclassified; ``worst_s`` the
    condition (factor units) of the worst valid proposal. Proposals without a ``valid`` field
    count as valid (records written before validity was judged).
    """
    by_instance: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(read_jsonl(steps_path), key=lambda r: r["step"]):
        by_instance.setdefault(int(r["instance"]), []).append(r)
    names = _factor_names(config)
    rows = []
    for instance, records in by_instance.items():
        prob = np.concatenate([np.asarray(r["true_prob"], dtype=float) for r in records])
        predicted = np.concatenate([np.asarray(r["predicted"]) for r in records])
        s = np.concatenate([np.asarray(r["s"], dtype=float) for r in records])
        valid = np.concatenate([np.asarray(r.get("valid", [True] * len(r["true_prob"])), dtype=bool)
                                for r in records])
        label = int(records[0]["label"])
        masked = np.where(valid, prob, np.inf)
        worst_index = int(masked.argmin()) if valid.any() else int(prob.argmin())
        rows.append({"instance": instance, "label": label, "E_T": float(np.mean(records[-1]["true_prob"])),
                     "worst": float(prob[worst_index]) if valid.any() else float("nan"),
                     "failed": bool(((predicted != label) & valid).any()),
                     "invalid_share": float(1 - valid.mean()),
                     "worst_s": dict(zip(names or [f"s{i}" for i in range(s.shape[1])], s[worst_index].tolist()))})
    return pd.DataFrame(rows)


def _factor_names(config: dict[str, Any]) -> list[str] | None:
    """Factor names of the run's world, in order (rebuilt from its config), or None."""
    world = config.get("world")
    if not world:
        return None
    try:
        return [f.name for f in build_world(world).factors]
    except Exception:  # a world that cannot be rebuilt here: fall back to positional names
        return None
