"""What every error-search method queries on the R pools, one chunk of pools at a time.

The pools are drawn from the run's seed; each method then runs on each chunk of ``audit.pool_chunk`` pools
with its own random stream, seeded from the run's seed, the method's name and the chunk's first pool
(:func:`advaudit.search.pools.chunk_generator`). What a method queries on a chunk therefore depends neither on
the methods before it, nor on the chunks before it, nor on the job that runs it: a shard of a split search
(``audit.shards`` > 1) runs its chunks of the methods that read no scores (every ``shards``-th chunk from
``shard``), and the merge reads them instead of running them. Each finished chunk is a line of
``<out>/queries/<method>.jsonl`` (its first pool, the budget, positions, answers and the spread and coverage
curves ``[chunk, B]``), which is also how a run resumes within a method.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.search.baselines import ScoreOrder
from advaudit.search.coverage import coverage_utility_curve, pool_diameter
from advaudit.search.features import pca_features
from advaudit.search.metrics import spread_curve
from advaudit.search.oracle import TerminalOracle
from advaudit.search.policy import PoolBatch, label_oracle, run_policy
from advaudit.search.pools import chunk_generator, draw_pools

log = logging.getLogger(__name__)
QUERIES = "queries"  # the run dir's folder of finished chunks, one JSON-lines file per method


def draw(search: Any, seed: int) -> int:
    """Draw ``search``'s pools ``[R, P]`` from ``seed`` and compute the features ``[E, D]`` the policies and the
    measures read; returns the budget per pool. ``search`` is an :class:`advaudit.audits.error_search.Search`."""
    audit = search.audit
    replications = 1 if search.interactive else audit.replications
    clamp = search.interactive or audit.clamp_pool_size  # pools as large as the data allow
    pool_size = min(audit.pool_size, len(search.index)) if clamp else audit.pool_size
    if pool_size < audit.pool_size:
        log.info("pools of %d: only %d eligible items (audit.pool_size=%d)", pool_size, len(search.index),
                 audit.pool_size)
    search.pools = draw_pools(len(search.index), pool_size, replications, torch.Generator().manual_seed(int(seed)))
    # table columns in different units count alike after range-normalisation; pixels stay as they are
    items, low, high = search.items, search.low, search.high
    scaled = (items - low) / (high - low).clamp_min(1e-12) if items.dim() == 2 else items
    search.features = pca_features(scaled, audit.features.components)
    return min(audit.budget, pool_size)


def query_pools(out: Path, search: Any, name: str, budget: int, seed: int,
                shard: int = 0, shards: int = 1) -> dict[str, Tensor]:
    """Method ``name`` on every ``shards``-th chunk of pools from ``shard`` (all of them by default), in order:
    ``positions`` and ``answers`` ``[R', B]`` of those pools and their ``spread`` and ``coverage`` curves ``[R', B]``
    (:func:`advaudit.search.metrics.spread_curve`, :func:`advaudit.search.coverage.coverage_utility_curve`, each
    computed on its chunk of pools, so the same in every job). Chunks found in ``<out>/queries/<name>.jsonl`` are
    read, the others run and appended there."""
    path = out / QUERIES / f"{name}.jsonl"
    done = {int(r["start"]): r for r in read_jsonl(path) if r.get("budget") == budget and "coverage" in r}
    pools, step = search.pools, search.audit.pool_chunk
    parts: dict[str, list[Tensor]] = {key: [] for key in _DTYPES}
    for start in range(shard * step, len(pools), shards * step):
        rows = slice(start, start + step)
        record = done.get(start)
        if record is None or len(record["positions"]) != len(pools[rows]):
            chunk = _run_chunk(out, search, name, budget, rows, chunk_generator(seed, name, start))
            path.parent.mkdir(parents=True, exist_ok=True)
            append_jsonl(path, [{"start": start, "budget": budget,
                                 **{key: value.tolist() for key, value in chunk.items()}}])
        else:
            chunk = {key: torch.tensor(record[key], dtype=dtype) for key, dtype in _DTYPES.items()}
        for key in _DTYPES:
            parts[key].append(chunk[key].view(-1, budget))
    return {key: torch.cat(values) if values else torch.empty(0, budget, dtype=_DTYPES[key])
            for key, values in parts.items()}


#: what a chunk records, as the dtypes it is computed in (JSON gives them back to the bit)
_DTYPES = {"positions": torch.long, "answers": torch.bool, "spread": torch.float32, "coverage": torch.float64}


def _run_chunk(out: Path, search: Any, name: str, budget: int, rows: slice,
               generator: torch.Generator) -> dict[str, Tensor]:
    """Method ``name`` on the pools ``rows``: positions, answers and the spread and coverage curves ``[chunk, B]``."""
    pools = search.pools
    features, confidence = search.features[pools[rows]], search.conf_e[pools[rows]]
    batch = PoolBatch(features, confidence, {k: v[rows] for k, v in search.item_scores.items()})
    oracle = (TerminalOracle(search.items, pools[0], search.index, search.target.class_names[search.critical],
                             search.conf_e, out / "oracle")
              if search.interactive else label_oracle(search.is_error[pools[rows]]))
    policy = ScoreOrder(name) if name in search.scorers else search.makers[name]()
    positions, answers = run_policy(policy, batch, oracle, budget, generator)
    coverage = coverage_utility_curve(features, confidence, positions, answers, search.audit.coverage_variance,
                                      pool_diameter(features))
    return {"positions": positions, "answers": answers, "spread": spread_curve(features, positions).float(),
            "coverage": coverage.double()}
