"""Each bias-injection option on a tiny case with a known answer."""

from __future__ import annotations

import pytest
import torch

from advaudit.data.bias import add_image_feature, apply_bias, apply_test_shift, keep_per_group
from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.data.split import Split
from advaudit.errors import AdvauditError

NAMES = ["a", "b"]


def tiny_images() -> Split:
    x = torch.zeros(8, 3, 10, 10)
    x[:, 0] = torch.linspace(0, 0.7, 8).view(8, 1, 1)  # brightness grows with the index
    y = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    return Split(x, y, {"instance": torch.tensor([0, 0, 0, 1, 1, 2, 2, 2]), "angle": torch.arange(8.0)})


def test_drop_subgroup_removes_exactly_the_range() -> None:
    out = apply_bias(tiny_images(), {"drop_subgroup": {"class": "b", "attribute": "angle", "low": 5, "high": 6}}, NAMES, 0)
    assert out.attributes["angle"].tolist() == [0, 1, 2, 3, 4, 7]
    by_image_stat = apply_bias(tiny_images(), {"drop_subgroup": {"class": 0, "attribute": "brightness",
                                                                  "low": 0.0, "high": 0.02}}, NAMES, 0)
    assert len(by_image_stat) == 7  # only item 0 (all-dark) of class a


def test_drop_subgroup_errors() -> None:
    with pytest.raises(AdvauditError, match="class 'c' does not exist"):
        apply_bias(tiny_images(), {"drop_subgroup": {"class": "c", "attribute": "angle", "low": 0, "high": 1}}, NAMES, 0)
    with pytest.raises(AdvauditError, match="attribute 'colour' does not exist"):
        apply_bias(tiny_images(), {"drop_subgroup": {"class": 0, "attribute": "colour", "low": 0, "high": 1}}, NAMES, 0)
    with pytest.raises(AdvauditError, match="low=3 > high=1"):
        apply_bias(tiny_images(), {"drop_subgroup": {"class": 0, "attribute": "angle", "low": 3, "high": 1}}, NAMES, 0)
    with pytest.raises(AdvauditError, match="unknown bias option"):
        apply_bias(tiny_images(), {"drop_sub": {}}, NAMES, 0)


def test_keep_per_group_caps_each_group() -> None:
    out = keep_per_group(tiny_images(), m=2, group="instance", generator=torch.Generator().manual_seed(0))
    counts = torch.bincount(out.attributes["instance"])
    assert counts.tolist() == [2, 2, 2]
    assert len(keep_per_group(tiny_images(), m=3, group="instance")) == 8  # m at the maximum keeps all
    per_class = keep_per_group(tiny_images(), m=1, group="class")
    assert sorted(per_class.y.tolist()) == [0, 1]
    with pytest.raises(AdvauditError, match="larger than the 3 items"):
        keep_per_group(tiny_images(), m=4, group="instance")


def test_test_grayscale_is_luminance_on_test_only() -> None:
    split = tiny_images()
    gray = apply_test_shift(split, {"test_grayscale": True}).x
    assert torch.allclose(gray[:, 0], gray[:, 1]) and torch.allclose(gray[:, 0], 0.299 * split.x[:, 0])
    assert apply_test_shift(split, {}).x is split.x
    with pytest.raises(AdvauditError, match="needs RGB"):
        apply_test_shift(Split(torch.zeros(2, 1, 4, 4), torch.zeros(2, dtype=torch.long)), {"test_grayscale": True})


def test_spurious_patch_marks_only_the_class() -> None:
    out = apply_bias(tiny_images(), {"spurious": {"class": "b", "kind": "patch", "strength": 1.0}}, NAMES, 0)
    patched = out.x[:, :, :2, :2].flatten(1).min(1).values == 1.0
    assert patched.tolist() == [False] * 4 + [True] * 4
    assert out.attributes["spurious"].tolist() == [0] * 4 + [1] * 4
    assert torch.equal(add_image_feature(torch.zeros(1, 1, 4, 4), "brightness", 0.3), torch.full((1, 1, 4, 4), 0.3))


def test_spurious_column_for_tables() -> None:
    table = Split(torch.randn(6, 3), torch.tensor([0, 1, 0, 1, 0, 1]))
    out = apply_bias(table, {"spurious": {"class": 1, "kind": "column", "strength": 2.0}}, NAMES, 0)
    assert out.x.shape == (6, 4) and out.x[:, 3].tolist() == [0, 2, 0, 2, 0, 2]


def test_bias_reaches_training_split_of_real_data() -> None:
    dm = FashionMNISTDataModule(limit={"train": 3000}, bias={"drop_subgroup": {"class": "trouser", "attribute": "brightness",
                                                                              "low": 0.0, "high": 1.0}})
    dm.setup()
    assert (dm.split("train").y == 1).sum() == 0
    assert (dm.split("test").y == 1).sum() == 1000  # test split untouched


def test_test_contrast_scales_each_image_about_its_mean() -> None:
    x = torch.tensor([[[[0.2, 0.6], [0.4, 0.8]]]])  # mean 0.5
    split = Split(x, torch.zeros(1, dtype=torch.long))
    shifted = apply_test_shift(split, {"test_contrast": 0.5}).x
    assert torch.allclose(shifted, torch.tensor([[[[0.35, 0.55], [0.45, 0.65]]]]))
    assert torch.allclose(shifted.mean(), x.mean()) and shifted.std() < x.std()
    with pytest.raises(AdvauditError, match="must be >= 0"):
        apply_test_shift(split, {"test_contrast": -1})
