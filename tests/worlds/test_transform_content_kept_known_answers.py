"""TransformWorld's ``min_content_kept`` on hand-made images whose kept share is known exactly."""

from __future__ import annotations

import pytest
import torch

from advaudit.data.base import ArrayDataModule
from advaudit.data.split import Split
from advaudit.errors import AdvauditError
from advaudit.worlds.transforms import TransformWorld
from advaudit.config import typed
from advaudit.worlds.settings import ValidityConf
from advaudit.worlds.validity import ValidityJudge


def _squares() -> torch.Tensor:
    """Two 16x16 grey images on black: a 4x4 square in the middle, and one against the right border."""
    x = torch.zeros(2, 1, 16, 16)
    x[0, 0, 6:10, 6:10] = 0.8
    x[1, 0, 6:10, 12:16] = 0.8  # 4 of the border's 64 pixels are bright: the background is still black
    return x


class _Squares(ArrayDataModule):
    def load_splits(self):
        x, y = _squares(), torch.tensor([0, 1])
        return {"train": Split(x, y), "val": Split(x, y), "test": Split(x, y)}, ["middle", "edge"]


WORLD = TransformWorld(_Squares(), factors={"translate_x": [-0.5, 0.5], "scale": [0.5, 1.15]})
NAMES = [f.name for f in WORLD.factors]


def _conditions(**values: float) -> torch.Tensor:
    """``[2, 1, C]``: the identity with ``values`` set, the same for both images."""
    s = WORLD.identity_conditions(2)
    for name, value in values.items():
        s[:, :, NAMES.index(name)] = value
    return s


def _in_frame(s: torch.Tensor, min_content_kept: float) -> list[bool]:
    _, checks = WORLD.render_checked(WORLD.instances("test"), s, ValidityConf(min_content_kept=min_content_kept))
    return checks["in_frame"].tolist()


def test_a_two_pixel_shift_keeps_half_of_the_edge_square_and_all_of_the_middle_one() -> None:
    # +0.125 of the width is 2 px right: the middle square stays whole, the edge square keeps 2 of its 4
    # columns (exactly 0.5). Catches: '>' for '>=' at the threshold, the threshold ignored, the share measured
    # before the transform, or the kept share of the wrong image
    shifted = _conditions(translate_x=0.125)
    assert _in_frame(shifted, 0.5) == [True, True]
    assert _in_frame(shifted, 0.51) == [True, False]
    assert _in_frame(shifted, 1.0) == [True, False]
    assert _in_frame(WORLD.identity_conditions(2), 1.0) == [True, True]  # nothing moved: all kept
    # two px left instead: the edge square comes in from the border, kept whole
    assert _in_frame(_conditions(translate_x=-0.125), 1.0) == [True, True]


def test_shrinking_keeps_all_content_once_corrected_for_area() -> None:
    # scale 0.5 shrinks the middle square to a quarter of its area, all of it in frame; catches the scale^2
    # correction dropped (the share would read 0.25)
    assert _in_frame(_conditions(scale=0.5), 0.9) == [True, True]


def test_the_judge_counts_the_content_check_from_audit_rules() -> None:
    # catches: the judge not applying TransformWorld's check, or min_content_kept not passed through
    judge = ValidityJudge(WORLD, ValidityConf(min_content_kept=0.51))
    assert judge.checks == ["in_frame"]
    _, valid, _ = judge.render(WORLD.instances("test"), _conditions(translate_x=0.125))
    assert valid.tolist() == [[True], [False]]
    with pytest.raises(AdvauditError, match="min_content_kept"):
        typed(ValidityConf, {"min_content_kept": 1.5})
