"""One worst-case examination from its shards: the records of K jobs (``audit.shards=K``, ``audit.shard=0..K-1``)
put back in the unsharded order, and the report of the whole examination computed from them.

Each shard examined every K-th instance of the same selection with the draws those instances get in
the whole examination (the examiners' ``restrict``), so the merged ``steps.jsonl``, ``result.json``
and report hold the numbers of the unsharded run with the same seed. What differs: the timings
(``seconds_examination`` is the sum of the shards' examination times, ``queries_per_second`` the
examined queries over that sum) and the paths of the run dir's files.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from advaudit.audits.worst_case import SHARD_FILE, STEPS_FILE, budget_in_queries, prepare
from advaudit.audits.worst_case_fresh import record_fresh_conditions
from advaudit.audits.worst_case_report import load_history, summarise_and_report
from advaudit.core.records import append_jsonl, read_json, read_jsonl, write_json
from advaudit.errors import require

log = logging.getLogger(__name__)

#: keys of a shard's ``result.json`` that say what was examined, kept in the merged one
_IDENTITY = ("status", "task", "audit", "target", "primary", "target_loading")


def merge_shards(shard_dirs: list[Path], out: Path) -> dict[str, Any]:
    """Merge the finished shards in ``shard_dirs`` into ``out``; returns the merged ``result.json`` content."""
    shards, results = _read_shards(shard_dirs)
    out.mkdir(parents=True, exist_ok=True)
    config = dict(results[0]["config"])
    config["audit"] = {**config["audit"], "shard": 0, "shards": 1}
    config["paths"] = {**config.get("paths", {}), "output_dir": str(out)}
    cfg = OmegaConf.create(config)
    row_of = {int(i): int(row) for sh in shards for row, i in zip(sh["rows"], sh["ids"])}
    records = [r for d in shard_dirs for r in read_jsonl(Path(d) / STEPS_FILE)]
    records.sort(key=lambda r: (r["step"], row_of[int(r["instance"])]))
    (out / STEPS_FILE).unlink(missing_ok=True)
    append_jsonl(out / STEPS_FILE, records)
    ex = prepare(cfg)
    require([int(i) for i in ex.z.ids.tolist()] == sorted(row_of, key=row_of.get),
            "the shards' instances are not the selection this config makes; merge shards of one examination")
    q = int(shards[0]["q"])
    _, report_budgets = budget_in_queries(ex.audit, q)
    seconds = sum(float(sh["seconds"]) for sh in shards)
    record_fresh_conditions(ex, load_history(out, len(ex.z)), q)
    result = summarise_and_report(ex, seconds, q, report_budgets)
    result["merged_from"] = [str(d) for d in shard_dirs]
    identity = {k: results[0][k] for k in _IDENTITY if k in results[0]}
    return {**identity, **result, "seconds": round(sum(float(r.get("seconds", 0)) for r in results), 2),
            "config": config}


def _read_shards(shard_dirs: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each shard's ``shard.json`` and ``result.json`` in shard order, after checking they are all the
    shards of one finished examination."""
    shards, results = [], []
    for d in shard_dirs:
        d = Path(d)
        require((d / SHARD_FILE).exists(), f"{d} holds no {SHARD_FILE}: pass the run dirs of a finished examination "
                "run with audit.shards=K (one per audit.shard)")
        shard, result = read_json(d / SHARD_FILE), read_json(d / "result.json")
        require(result.get("status") == "ok", f"{d} did not finish ({result.get('error')}); rerun that shard into "
                "the same run dir (it resumes), then merge")
        shards.append(shard)
        results.append(result)
    order = sorted(range(len(shards)), key=lambda k: shards[k]["shard"])
    shards, results = [shards[k] for k in order], [results[k] for k in order]
    shard_dirs[:] = [shard_dirs[k] for k in order]
    count = shards[0]["shards"]
    require(len({sh["key"] for sh in shards}) == 1, "the run dirs hold shards of different examinations "
            "(config or seed differ); merge the shards of one examination")
    require([sh["shard"] for sh in shards] == list(range(count)),
            f"got shards {[sh['shard'] for sh in shards]} of {count}; pass every shard 0..{count - 1} once")
    return shards, results


def merge_sweep(sweep_dir: Path) -> list[Path]:
    """Merge every sharded examination of a multirun (its jobs' ``shard.json``, grouped by examination) into
    ``<sweep_dir>/merged/<examination key>/``; returns the merged run dirs. A group with a missing or
    failed shard is left unmerged with a warning naming why."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(Path(sweep_dir).rglob(SHARD_FILE)):
        groups.setdefault(str(read_json(path)["key"]), []).append(path.parent)
    merged = []
    for key, dirs in groups.items():
        out = Path(sweep_dir) / "merged" / key
        try:
            write_json(out / "result.json", merge_shards(dirs, out))
        except Exception as error:  # noqa: BLE001 - a merge must never hide the sweep's own outcome
            log.warning("the %d shards of examination %s were not merged: %s", len(dirs), key, error)
            continue
        merged.append(out)
    return merged
