"""TransformWorld on real Fashion-MNIST images (and RGB images the test makes)."""

from __future__ import annotations

import pytest
import torch

from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.data.sklearn_sets import TabularDataModule
from advaudit.errors import AdvauditError
from advaudit.worlds.transforms import TransformWorld, adjust_hue_saturation, gaussian_blur

WORLD = TransformWorld(FashionMNISTDataModule(limit={"train": 10, "val": 10, "test": 64}))


def _conditions(**values: float) -> torch.Tensor:
    s = WORLD.identity_conditions(8)
    for name, value in values.items():
        s[:, :, [f.name for f in WORLD.factors].index(name)] = value
    return s


def test_identity_conditions_reproduce_the_images() -> None:
    z = WORLD.instances("test").subset(torch.arange(8))
    assert torch.allclose(WORLD.render(z, WORLD.identity_conditions(8)), z.data, atol=1e-4)
    assert [f.name for f in WORLD.factors][:3] == ["rotation", "translate_x", "translate_y"]  # gray: no hue


def test_geometric_and_photometric_factors_have_their_effect() -> None:
    z = WORLD.instances("test").subset(torch.arange(8))
    shifted = WORLD.render(z, _conditions(translate_x=0.1))
    # +0.1 of the width moves content right by ~2.8 px: compare with a pure pixel shift
    assert torch.allclose(shifted[..., 4:24], torch.roll(z.data, 3, -1)[..., 4:24], atol=0.35)
    brighter = WORLD.render(z, _conditions(brightness=0.1))
    assert float(brighter.mean()) > float(z.data.mean()) + 0.05
    blurred = WORLD.render(z, _conditions(blur=0.5))
    assert float(blurred.std()) < float(z.data.std())
    rotated = WORLD.render(z, _conditions(rotation=30.0))
    assert float((rotated - z.data).abs().mean()) > 0.05
    assert torch.allclose(WORLD.render(z, _conditions(rotation=30.0)), rotated)  # deterministic


def test_out_of_bounds_and_non_image_data_are_refused() -> None:
    z = WORLD.instances("test").subset(torch.arange(8))
    with pytest.raises(AdvauditError, match="factor 'rotation'"):
        WORLD.render(z, _conditions(rotation=90.0))
    with pytest.raises(AdvauditError, match="needs an image dataset"):
        TransformWorld(TabularDataModule(name="wine"))
    narrowed = TransformWorld(FashionMNISTDataModule(limit={"train": 10}), factors={"rotation": [-5, 5], "blur": 0})
    assert narrowed.factors[0].high == 5 and [f for f in narrowed.factors if f.name == "blur"][0].fixed


def test_colour_ops_keep_gray_gray_and_blur_keeps_constants() -> None:
    gray = torch.full((2, 3, 8, 8), 0.4)
    out = adjust_hue_saturation(gray, torch.tensor([0.1, -0.1]), torch.tensor([1.5, 0.5]))
    assert torch.allclose(out, gray, atol=1e-5)
    red = torch.zeros(1, 3, 4, 4)
    red[:, 0] = 1.0
    shifted = adjust_hue_saturation(red, torch.tensor([1 / 3]), torch.tensor([1.0]))
    assert int(shifted[0, :, 0, 0].argmax()) == 1  # a third of a turn: red -> green
    assert torch.allclose(gaussian_blur(gray, torch.tensor([0.0, 1.5])), gray, atol=1e-6)
