"""Choosing a world's bounds from a reference judge (advaudit.worlds.judge_box): the greedy box drops
the region where the judge fails and nothing else."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from advaudit.worlds.judge_box import box_for_share, right_by_bin, share_over_instances
from advaudit.worlds.protocol import Factor


def _world() -> SimpleNamespace:
    return SimpleNamespace(factors=[Factor("camera_elevation", -90.0, 90.0, "deg"),
                                    Factor("sun_energy", 0.0, 5.0, "")])


def test_the_box_drops_the_failing_end_of_one_factor_and_keeps_the_rest() -> None:
    generator = torch.Generator().manual_seed(0)
    u = torch.rand(20_000, 2, generator=generator)
    s = torch.stack([-90 + 180 * u[:, 0], 5 * u[:, 1]], 1)
    # the judge fails on top views (elevation > 54 deg) and on 1% of everything else
    right = (s[:, 0] <= 54) & (torch.rand(len(s), generator=generator) > 0.01)
    bounds, keep = box_for_share(_world(), s, right, bins=5, target=0.97)
    assert bounds == {"camera_elevation": [-90.0, 54.0]}
    assert torch.equal(keep, s[:, 0] <= 54)
    assert right[keep].float().mean() >= 0.97


def test_a_judge_that_fails_everywhere_alike_gets_no_box_below_the_kept_floor() -> None:
    generator = torch.Generator().manual_seed(1)
    u = torch.rand(5_000, 2, generator=generator)
    s = torch.stack([-90 + 180 * u[:, 0], 5 * u[:, 1]], 1)
    right = torch.rand(len(s), generator=generator) > 0.2  # 80% right, wherever
    bounds, keep = box_for_share(_world(), s, right, bins=5, target=0.97, min_kept=0.3)
    assert keep.float().mean() >= 0.3  # it stops at the floor instead of shrinking to a lucky corner
    assert right[keep].float().mean() < 0.97


def test_shares_per_bin_and_over_instances_have_known_values() -> None:
    s = torch.tensor([[-80.0, 1.0], [-10.0, 1.0], [10.0, 4.0], [80.0, 4.0]])
    right = torch.tensor([True, True, False, True])
    table = right_by_bin(_world(), s, right, bins=2)
    assert [(r["low"], r["high"], r["share"], r["n"]) for r in table["camera_elevation"]] == [
        (-90.0, 0.0, 1.0, 2), (0.0, 90.0, 0.5, 2)]
    assert [r["share"] for r in table["sun_energy"]] == [1.0, 0.5]
    # instance 0 (two renders) always right, instance 1 never: 2,000 resamples of 2 instances span [0, 1]
    summary = share_over_instances(torch.tensor([True, True, False, False]), torch.tensor([0, 0, 1, 1]))
    assert summary == {"share": 0.5, "lo": 0.0, "hi": 1.0, "n": 4}
