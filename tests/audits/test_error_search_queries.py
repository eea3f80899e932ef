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
    """12 pools of 30 of 80 items with two clusters of features; the items of low confidence are mistakes."""
    generator = torch.Generator().manual_seed(5)
    features = torch.cat([torch.randn(40, 3, generator=generator), torch.randn(40, 3, generator=generator) + 4])
    confidence = 0.66 + 0.33 * torch.rand(80, generator=generator)
    return SimpleNamespace(pools=draw_pools(80, 30, 12, generator), features=features, conf_e=confidence,
                           is_error=confidence < 0.75, audit=SimpleNamespace(pool_chunk=pool_chunk), item_scores={},
                           scorers={}, interactive=False,
                           makers={"lakkaraju": LakkarajuBandit, "bansal_weld": BansalWeldCoverage})


@pytest.mark.parametrize("method", ["lakkaraju", "bansal_weld"])
def test_shards_run_their_chunks_as_the_whole_run_does_and_a_rerun_reads_them(method: str, tmp_path: Path) -> None:
    search = _search(pool_chunk=4)
    whole = query_pools(tmp_path / "whole", search, method, 8, seed=3)
    assert whole[0].shape == whole[1].shape == (12, 8)
    assert all(len(set(row.tolist())) == 8 for row in whole[0])       # no item of a pool queried twice
    parts = [query_pools(tmp_path / f"shard{k}", search, method, 8, seed=3, shard=k, shards=2) for k in (0, 1)]
    # shard 0 holds chunks 0 and 2 (pools 0-3, 8-11), shard 1 chunk 1 (pools 4-7)
    for got, want in zip((0, 1), (0, 1)):
        joined = torch.cat([parts[0][got][:4], parts[1][got], parts[0][got][4:]])
        assert torch.equal(joined, whole[want])
    assert [r["start"] for r in read_jsonl(tmp_path / "shard1" / QUERIES / f"{method}.jsonl")] == [4]
    # a rerun reads the finished chunks: a method that cannot start anymore is not asked
    search.makers = {}
    again = query_pools(tmp_path / "whole", search, method, 8, seed=3)
    assert torch.equal(again[0], whole[0]) and torch.equal(again[1], whole[1])
    other_seed = query_pools(tmp_path / "seed4", _search(pool_chunk=4), method, 8, seed=4)
    assert not torch.equal(other_seed[0], whole[0])
