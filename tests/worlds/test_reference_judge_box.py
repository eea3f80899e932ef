"""Choosing ShapeWorld's bounds from a reference judge (benchmarks/reference_judge.py): the greedy box
drops the region where the judge fails and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import torch

_saved_path = list(sys.path)  # keep benchmarks/ out of other tests' imports
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from reference_judge import box_for_share  # noqa: E402

sys.path[:] = _saved_path

from advaudit.worlds.protocol import Factor  # noqa: E402


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
