"""Each error-search method draws from its own stream per chunk of pools: a chunk's queries do not depend on the
other chunks, on the job that runs it or on the other methods, so the shards of a split search run their chunks of
the policies and the merge reads them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from advaudit.audits.error_search_queries import QUERIES, query_pools
from advaudit.core.records import read_jsonl
from advaudit.search.baselines import BansalWeldCoverage, LakkarajuBandit
from advaudit.search.pools import chunk_generator, draw_pools


def test_a_chunk_stream_is_fixed_by_the_seed_the_method_and_the_chunk() -> None:
    def draw(seed: int, method: str, start: int) -> torch.Tensor:
        return torch.rand(6, generator=chunk_generator(seed, method, start))

    assert torch.equal(draw(0, "lakkaraju", 8), draw(0, "lakkaraju", 8))
    others = [draw(1, "lakkaraju", 8), draw(0, "bansal_weld", 8), draw(0, "lakkaraju", 0), draw(0, "lakkaraju", 16)]
    assert all(not torch.equal(draw(0, "lakkaraju", 8), other) for other in others)


def _search(pool_chunk: int) -> SimpleNamespace:
    """6 pools of 16 of 40 items with two clusters of features; the items of low confidence are mistakes."""
    generator = torch.Generator().manual_seed(5)
    features = torch.cat([torch.randn(20, 3, generator=generator), torch.randn(20, 3, generator=generator) + 4])
    confidence = 0.66 + 0.33 * torch.rand(40, generator=generator)
    return SimpleNamespace(pools=draw_pools(40, 16, 6, generator), features=features, conf_e=confidence,
                           is_error=confidence < 0.75, audit=SimpleNamespace(pool_chunk=pool_chunk, coverage_variance=0.001), item_scores={},
                           scorers={}, interactive=False,
                           makers={"lakkaraju": LakkarajuBandit, "bansal_weld": BansalWeldCoverage})


@pytest.mark.parametrize("method", ["lakkaraju", "bansal_weld"])
def test_shards_run_their_chunks_as_the_whole_run_does_and_a_rerun_reads_them(method: str, tmp_path: Path) -> None:
    search = _search(pool_chunk=2)
    whole = query_pools(tmp_path / "whole", search, method, 5, seed=3)
    assert all(whole[key].shape == (6, 5) for key in ("positions", "answers", "spread", "coverage"))
    assert all(len(set(row.tolist())) == 5 for row in whole["positions"])       # no item of a pool queried twice
    parts = [query_pools(tmp_path / f"shard{k}", search, method, 5, seed=3, shard=k, shards=2) for k in (0, 1)]
    # shard 0 holds chunks 0 and 2 (pools 0-1, 4-5), shard 1 chunk 1 (pools 2-3): the same bits as the whole run
    for key, value in whole.items():
        assert torch.equal(torch.cat([parts[0][key][:2], parts[1][key], parts[0][key][2:]]), value), key
    assert [r["start"] for r in read_jsonl(tmp_path / "shard1" / QUERIES / f"{method}.jsonl")] == [2]
    # a rerun reads the finished chunks back to the bit: a method that cannot start anymore is not asked
    search.makers = {}
    again = query_pools(tmp_path / "whole", search, method, 5, seed=3)
    assert all(torch.equal(again[key], value) and again[key].dtype == value.dtype for key, value in whole.items())
    other_seed = query_pools(tmp_path / "seed4", _search(pool_chunk=2), method, 5, seed=4)
    assert not torch.equal(other_seed["positions"], whole["positions"])
