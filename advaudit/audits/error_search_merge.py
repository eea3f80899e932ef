"""One error search from its shards: the scores and queries of K jobs (``audit.shards=K``,
``audit.shard=0..K-1``) put together, then every scorer's queries, the curves and the report of the whole
search, once.

Each shard attacked every K-th chunk of each scorer's eligible items, with the chunks and seeds one job
uses (:meth:`advaudit.search.scorers.AttackScorer.score_part`), into its ``scores/`` cache, then drew the R
pools as one job does and ran the methods that read no scores on every K-th chunk of pools, each chunk with
its own seeded stream (:mod:`advaudit.audits.error_search_queries`), into its ``queries/``. The merge copies
both into its run dir and runs the search there (:func:`advaudit.audits.error_search.run`): every item is
found scored and every policy's chunk found queried, so the pools, the methods' curves and the summary are
the unsharded run's. What differs: the timings (``attack_seconds`` is the sum of the shards' chunk times; each
method's ``seconds``, which in the merge leave out the shards' queries) and the paths of the files. The merge
loads the target and predicts its split once (to know the eligible items and their confidence), as one job
does before its pools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from advaudit.audits import error_search
from advaudit.audits.error_search_queries import QUERIES

#: keys of a shard's ``result.json`` that say what was audited, kept in the merged one
_IDENTITY = ("status", "task", "audit", "target", "primary", "target_loading")


def merge_error_search(dirs: list[Path], shards: list[dict[str, Any]], results: list[dict[str, Any]],
                       out: Path) -> dict[str, Any]:
    """The merged ``result.json`` content of the finished shards in ``dirs`` (their ``shard.json`` and
    ``result.json``, checked by :func:`advaudit.audits.shards.read_shards`); the search's files in ``out``."""
    config = dict(results[0]["config"])
    config["audit"] = {**config["audit"], "shard": 0, "shards": 1}
    config["paths"] = {**config.get("paths", {}), "output_dir": str(out)}
    for folder in ("scores", QUERIES):
        _join_lines(dirs, Path(out), folder)
    names = shards[0]["scorers"]
    resumed = {name: sum(int(sh["scorers"][name]["resumed_items"]) for sh in shards) for name in names}
    summary = error_search.run(OmegaConf.create(config), resumed=resumed)
    identity = {k: results[0][k] for k in _IDENTITY if k in results[0]}
    return {**identity, **summary, "merged_from": [str(d) for d in dirs],
            "seconds": round(sum(float(r.get("seconds", 0)) for r in results), 2), "config": config}


def _join_lines(dirs: list[Path], out: Path, folder: str) -> None:
    """``<folder>/<file>`` of every shard joined into ``out/<folder>``: the per-item and per-chunk records line
    by line (each shard holds its own items and chunks), the records of work every shard did alike (GAD's
    pseudo-model) from the first shard that has them."""
    joined = out / folder
    joined.mkdir(parents=True, exist_ok=True)
    for old in joined.glob("*.jsonl"):
        old.unlink()
    names = sorted({path.name for d in dirs for path in (Path(d) / folder).glob("*.jsonl")})
    for name in names:
        parts = [Path(d) / folder / name for d in dirs if (Path(d) / folder / name).exists()]
        shared = name.endswith("_pseudo_model.jsonl")
        text = parts[0].read_text() if shared else "".join(_lines(p) for p in parts)
        (joined / name).write_text(text)


def _lines(path: Path) -> str:
    text = path.read_text()
    return text if not text or text.endswith("\n") else text[: text.rfind("\n") + 1]  # a torn last line is dropped
