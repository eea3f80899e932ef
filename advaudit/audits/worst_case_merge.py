"""One worst-case examination from its shards: the records of K jobs (``audit.shards=K``, ``audit.shard=0..K-1``)
put back in the unsharded order, and the report of the whole examination written once from them.

Each shard examined every K-th instance of the same selection with the draws those instances get in
the whole examination (the examiners' ``restrict``), rendered and queried its instances' fresh
conditions (gallery, random conditions, judge) with the whole examination's draws, and saved what the
report needs to know about its instances (:class:`~advaudit.audits.worst_case_record.ExaminationRecord`
in ``shard.json``). The merge joins these records and writes the report: it loads no target, builds no
world or judge and selects no instances. The merged ``steps.jsonl``, ``fresh_conditions.pt``,
``result.json`` and report hold the numbers of the unsharded run with the same seed. What differs: the
timings (``seconds_examination`` is the sum of the shards' examination times, ``queries_per_second`` the
examined queries over that sum) and the paths of the run dir's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from advaudit.audits.settings import WorstCaseAuditConf
from advaudit.audits.worst_case import STEPS_FILE, budget_in_queries
from advaudit.audits.worst_case_fresh import join_fresh_conditions, read_fresh_conditions, save_fresh_conditions
from advaudit.audits.worst_case_record import ExaminationRecord, join_histories
from advaudit.audits.worst_case_report import summarise_and_report
from advaudit.config import typed
from advaudit.errors import require

#: keys of a shard's ``result.json`` that say what was examined, kept in the merged one
_IDENTITY = ("status", "task", "audit", "target", "primary", "target_loading")


def merge_worst_case(dirs: list[Path], shards: list[dict[str, Any]], results: list[dict[str, Any]],
                     out: Path) -> dict[str, Any]:
    """The merged ``result.json`` content of the finished shards in ``dirs`` (their ``shard.json`` and
    ``result.json``, checked by :func:`advaudit.audits.shards.read_shards`), its records and report in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    config = dict(results[0]["config"])
    config["audit"] = {**config["audit"], "shard": 0, "shards": 1}
    config["paths"] = {**config.get("paths", {}), "output_dir": str(out)}
    cfg = OmegaConf.create(config)
    audit = typed(WorstCaseAuditConf, cfg.audit)
    rows = [torch.as_tensor(sh["rows"], dtype=torch.long) for sh in shards]
    n = int(shards[0]["n_instances"])
    require(sorted(torch.cat(rows).tolist()) == list(range(n)), "the shards' instances are not every instance of "
            "the examination once; merge the shards of one examination")
    parts = [ExaminationRecord.from_facts(sh["record"], cfg, audit, out) for sh in shards]
    record = parts[0].joined(parts, [r.numpy() for r in rows])
    _merge_steps(dirs, rows, out / STEPS_FILE)
    save_fresh_conditions(join_fresh_conditions([read_fresh_conditions(d) for d in dirs], rows), out)
    q = int(shards[0]["q"])
    _, report_budgets = budget_in_queries(audit, q)
    seconds = sum(float(sh["seconds"]) for sh in shards)
    result = summarise_and_report(record, seconds, q, report_budgets, join_histories(dirs, [r.numpy() for r in rows]))
    result["merged_from"] = [str(d) for d in dirs]
    if record.endpoint is not None:  # as one job's result says where its target was served (advaudit.tasks)
        result["endpoint"] = record.endpoint
    identity = {k: results[0][k] for k in _IDENTITY if k in results[0]}
    return {**identity, **result, "seconds": round(sum(float(r.get("seconds", 0)) for r in results), 2),
            "config": config}


def _merge_steps(dirs: list[Path], rows: list[torch.Tensor], path: Path) -> None:
    """The shards' step records in the unsharded order (by step, then by the instance's row), written to ``path``
    line for line as the shards wrote them: each shard wrote one line per instance per step in its rows' order, so
    row ``r`` of step ``t`` is line ``t * n_k + j`` of the shard holding it at its ``j``-th row."""
    lines = [(Path(d) / STEPS_FILE).read_text(encoding="utf-8").splitlines(keepends=True) for d in dirs]
    sizes = [len(r) for r in rows]
    steps = len(lines[0]) // sizes[0]
    require(all(len(part) == steps * size for part, size in zip(lines, sizes)),
            "the shards' steps.jsonl hold different numbers of steps; rerun the unfinished shard, then merge")
    holder = {int(r): (k, j) for k, where in enumerate(rows) for j, r in enumerate(where.tolist())}
    order = [holder[r] for r in range(sum(sizes))]
    text = "".join(lines[k][t * sizes[k] + j] for t in range(steps) for k, j in order)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
