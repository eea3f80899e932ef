"""What a worst-case report reads about its examination besides the records of its queries, as plain data.

The report (:mod:`advaudit.audits.worst_case_report`) needs, beyond ``steps.jsonl`` and
``fresh_conditions.pt``, a few facts the examination was set up with: the instances' labels, the
target's class names (and how they were paired with the world's), the world's factors and which of
them were searched, and what the validity judge checked. :class:`ExaminationRecord` holds exactly
these. One job takes them from its live examination (:meth:`ExaminationRecord.of`); each shard of a
sharded examination saves its own in ``shard.json`` and the merge joins them
(:mod:`advaudit.audits.worst_case_merge`), so the report of the whole examination is written without
loading the target, building the judge or selecting the instances again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from advaudit.audits.settings import WorstCaseAuditConf
from advaudit.models.targets.endpoint import endpoint_records
from advaudit.models.targets.imported.spec import endpoint_label
from advaudit.worlds.protocol import Factor

HISTORY_FILE = "history.pt"


@dataclass
class ExaminationRecord:
    """The facts of one examination its report reads (module docstring).

    ``ids`` and ``labels`` ``[N]``: the examined instances in the examination's order; ``factors``: the world's
    factors, of which ``free`` (indices) were searched; ``checks``, ``reference_path`` and ``min_prob``: the
    validity judge's checks, its reference judge and threshold; ``endpoint``: for a target on a server, what its
    client recorded (:meth:`advaudit.models.targets.endpoint.client.EndpointClient.record`: the model version, the inputs, requests
    and seconds waiting), else None."""

    cfg: DictConfig
    audit: WorstCaseAuditConf
    out: Path
    ids: np.ndarray
    labels: np.ndarray
    class_names: list[str]
    class_alignment: Any
    factors: list[Factor]
    free: list[int]
    checks: list[str]
    reference_path: str | None
    min_prob: float | None
    endpoint: dict[str, Any] | None = None

    @property
    def free_factors(self) -> list[Factor]:
        return [self.factors[i] for i in self.free]

    @classmethod
    def of(cls, ex: Any) -> "ExaminationRecord":
        """The record of a live examination (:class:`advaudit.audits.worst_case.Examination`)."""
        judge = ex.judge
        return cls(ex.cfg, ex.audit, Path(ex.out), ex.z.ids.cpu().numpy(), ex.z.labels.cpu().numpy(),
                   [str(c) for c in ex.target.class_names], ex.target.meta.get("class_alignment"),
                   list(ex.world.factors), list(ex.space.free), list(judge.checks),
                   str(judge.reference_path) if judge.reference_path is not None else None,
                   float(judge.min_prob) if judge.reference_path is not None else None, served_record(ex.cfg))

    def facts(self) -> dict[str, Any]:
        """The record as plain data (JSON), without the config, settings and run dir it is read with."""
        return {"ids": self.ids.tolist(), "labels": self.labels.tolist(), "class_names": self.class_names,
                "class_alignment": self.class_alignment, "factors": [dataclasses.asdict(f) for f in self.factors],
                "free": self.free, "checks": self.checks, "reference_path": self.reference_path,
                "min_prob": self.min_prob, "endpoint": self.endpoint}

    @classmethod
    def from_facts(cls, facts: dict[str, Any], cfg: DictConfig, audit: WorstCaseAuditConf,
                   out: Path) -> "ExaminationRecord":
        """The record :meth:`facts` wrote, read with the examination's ``cfg``, ``audit`` settings and run dir."""
        return cls(cfg, audit, Path(out), np.asarray(facts["ids"], dtype=np.int64),
                   np.asarray(facts["labels"], dtype=np.int64), list(facts["class_names"]), facts["class_alignment"],
                   [Factor(**f) for f in facts["factors"]], [int(i) for i in facts["free"]], list(facts["checks"]),
                   facts["reference_path"], facts["min_prob"], facts.get("endpoint"))

    def joined(self, parts: list["ExaminationRecord"], rows: list[np.ndarray]) -> "ExaminationRecord":
        """The record of the whole examination from its shards' ``parts``, whose instances sit at ``rows``
        (``[n_k]`` each) of it; everything but the instances is the same in every part (this one's)."""
        n = sum(len(r) for r in rows)
        ids, labels = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        for part, where in zip(parts, rows):
            ids[where], labels[where] = part.ids, part.labels
        return dataclasses.replace(self, ids=ids, labels=labels, endpoint=joined_endpoint([p.endpoint for p in parts]))


def served_record(cfg: DictConfig) -> dict[str, Any] | None:
    """What this process's client of ``cfg.target``'s server recorded so far (None for a target not on a server)."""
    block = cfg.target.get("endpoint") if isinstance(cfg.target, DictConfig) else None
    address = endpoint_label(block) if block is not None else None
    return next((r for r in reversed(endpoint_records()) if r["endpoint"] == address), None)


def joined_endpoint(records: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """One record for the jobs of a sharded examination that queried the same server: the counts and seconds
    summed (each job loaded the target, so each sent its own probe batch), the first job's address and settings,
    the model versions the jobs were told (``", "``-joined where they differ) and ``jobs``, how many there were."""
    present = [r for r in records if r is not None]
    if len(present) <= 1:
        return present[0] if present else None
    versions = list(dict.fromkeys(str(r["model_version"]) for r in present if r.get("model_version")))
    joined = {**present[0], "model_version": ", ".join(versions) or None, "jobs": len(present)}
    for key, value in present[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total = sum(r.get(key) or 0 for r in present)
            joined[key] = round(total, 3) if isinstance(total, float) else total
    return joined


def save_history(history: dict[str, Any], out: Path) -> Path:
    """A shard's per-instance arrays (:func:`advaudit.audits.worst_case_history.load_history`) as tensors in
    ``<out>/history.pt``, so the merge joins them instead of parsing every shard's ``steps.jsonl`` again."""
    flat = {key: torch.as_tensor(np.asarray(value)) for key, value in history.items() if key != "checks"}
    flat.update({f"checks/{name}": torch.as_tensor(value) for name, value in history["checks"].items()})
    path = Path(out) / HISTORY_FILE
    torch.save(flat, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)
    return path


def join_histories(dirs: list[Path], rows: list[np.ndarray]) -> dict[str, Any]:
    """The whole examination's per-instance arrays from its shards' ``history.pt`` (in ``dirs``), whose instances
    sit at ``rows`` (``[n_k]`` each) of it."""
    parts = [torch.load(Path(d) / HISTORY_FILE, weights_only=True) for d in dirs]
    n = sum(len(r) for r in rows)
    joined: dict[str, Any] = {"checks": {}}
    for key, first in parts[0].items():
        whole = np.empty((n, *first.shape[1:]), dtype=first.numpy().dtype)
        for part, where in zip(parts, rows):
            whole[where] = part[key].numpy()
        if key.startswith("checks/"):
            joined["checks"][key[len("checks/"):]] = whole
        else:
            joined[key] = whole
    return joined
