"""What every error-search method queries on the R pools, one chunk of pools at a time.

The pools are drawn from the run's seed; each method then runs on each chunk of ``audit.pool_chunk`` pools
with its own random stream, seeded from the run's seed, the method's name and the chunk's first pool
(:func:`advaudit.search.pools.chunk_generator`). What a method queries on a chunk therefore depends neither on
the methods before it, nor on the chunks before it, nor on the job that runs it: a shard of a split search
(``audit.shards`` > 1) runs its chunks of the methods that read no scores (every ``shards``-th chunk from
``shard``), and the merge reads them instead of running them. Each finished chunk is a line of
``<out>/queries/<method>.jsonl`` (its first pool, the budget, positions and answers ``[chunk, B]``), which is
also how a run resumes within a method.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.search.baselines import ScoreOrder
from advaudit.search.features import pca_features
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
                shard: int = 0, shards: int = 1) -> tuple[Tensor, Tensor]:
    """Method ``name`` on every ``shards``-th chunk of pools from ``shard`` (all of them by default): positions
    and answers ``[R', B]`` of those pools, in order. Chunks found in ``<out>/queries/<name>.jsonl`` are read,
    the others run and appended there."""
    path = out / QUERIES / f"{name}.jsonl"
    done = {int(r["start"]): r for r in read_jsonl(path) if r.get("budget") == budget}
    pools, step = search.pools, search.audit.pool_chunk
    positions, answers = [], []
    for start in range(shard * step, len(pools), shards * step):
        rows = slice(start, start + step)
        record = done.get(start)
        if record is None or len(record["positions"]) != len(pools[rows]):
            chosen, found = _run_chunk(out, search, name, budget, rows, chunk_generator(seed, name, start))
            path.parent.mkdir(parents=True, exist_ok=True)
            append_jsonl(path, [{"start": start, "budget": budget, "positions": chosen.tolist(),
                                 "answers": found.int().tolist()}])
        else:
            chosen, found = torch.tensor(record["positions"]), torch.tensor(record["answers"]).bool()
        positions.append(chosen.view(-1, budget))
        answers.append(found.view(-1, budget))
    empty = torch.empty(0, budget, dtype=torch.long)
    return (torch.cat(positions), torch.cat(answers)) if positions else (empty, empty.bool())


def _run_chunk(out: Path, search: Any, name: str, budget: int, rows: slice,
               generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Method ``name`` on the pools ``rows``: positions and answers ``[chunk, B]``."""
    pools = search.pools
    batch = PoolBatch(search.features[pools[rows]], search.conf_e[pools[rows]],
                      {k: v[rows] for k, v in search.item_scores.items()})
    oracle = (TerminalOracle(search.items, pools[0], search.index, search.target.class_names[search.critical],
                             search.conf_e, out / "oracle")
              if search.interactive else label_oracle(search.is_error[pools[rows]]))
    policy = ScoreOrder(name) if name in search.scorers else search.makers[name]()
    return run_policy(policy, batch, oracle, budget, generator)
