"""Merging the shards of an audit (``audit.shards=K``) into the run the audit would have been in one job.

Each audit that splits has one merge function, named in :data:`MERGES` by the audit's name (the
``audit`` field every shard's ``shard.json`` records): the worst-case examination
(:mod:`advaudit.audits.worst_case_merge`) and error search (:mod:`advaudit.audits.error_search_merge`).
``python -m advaudit.merge`` merges the run dirs it is given; at the end of a multirun the sweep
callback merges every sharded audit of the sweep (:func:`merge_sweep`) and names, for each one left
unmerged, the shard that did not finish and the command that finishes it.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any, Callable

from advaudit.audits.shards import read_shards, sweep_shards
from advaudit.core.records import write_json
from advaudit.errors import AdvauditError, require

log = logging.getLogger(__name__)

#: the audits that split over jobs, and the function (``module:name``, imported when used: a merge pays only its own
#: audit's imports) that merges their shards: (run dirs, shard.json, result.json, out) -> result
MERGES: dict[str, str] = {
    "worst_case": "advaudit.audits.worst_case_merge:merge_worst_case",
    "error_search": "advaudit.audits.error_search_merge:merge_error_search",
}

Merge = Callable[[list[Path], list[dict[str, Any]], list[dict[str, Any]], Path], dict[str, Any]]


def merge_function(audit: str) -> Merge:
    """The function that merges shards of ``audit`` (one of :data:`MERGES`)."""
    module, name = MERGES[audit].split(":")
    return getattr(importlib.import_module(module), name)


def merge_shards(shard_dirs: list[Path], out: Path) -> dict[str, Any]:
    """Merge the finished shards in ``shard_dirs`` into ``out``; returns the merged ``result.json`` content
    (also written to ``<out>/result.json``)."""
    dirs, shards, results = read_shards(list(shard_dirs))
    audit = str(shards[0].get("audit", "worst_case"))  # shards written before error search split were worst case
    require(audit in MERGES, f"{dirs[0]} holds a shard of audit {audit!r}, which does not split; audits that do: "
            f"{sorted(MERGES)}")
    result = merge_function(audit)(dirs, shards, results, Path(out))
    write_json(Path(out) / "result.json", result)
    return result


def merge_sweep(sweep_dir: Path) -> list[Path]:
    """Merge every sharded audit of a multirun (its jobs' ``shard.json``, grouped by audit) into
    ``<sweep_dir>/merged/<audit key>/``; returns the merged run dirs. A group with a missing or unfinished
    shard is left unmerged with a warning that names the shard and the command that finishes it."""
    merged = []
    for key, dirs in sweep_shards(Path(sweep_dir)).items():
        out = Path(sweep_dir) / "merged" / key
        try:
            merge_shards(dirs, out)
        except AdvauditError as error:
            log.warning("the %d shards of %s were not merged: %s; then merge with: python -m advaudit.merge %s "
                        "--out %s", len(dirs), key, error, " ".join(str(d) for d in dirs), out)
            continue
        except Exception as error:  # noqa: BLE001 - a merge must never hide the sweep's own outcome
            log.warning("the %d shards of %s were not merged: %s", len(dirs), key, error)
            continue
        merged.append(out)
    return merged
