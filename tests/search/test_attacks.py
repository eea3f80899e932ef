"""Attacks behind adversarial distance and GAD, on models whose exact boundary distance is known."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from advaudit.errors import AdvauditError
from advaudit.models.nets import build_net
from advaudit.models.targets.target import TorchTarget
from advaudit.search.attacks import (attack_box, attack_items, batched_hop_skip_jump, foolbox_attack,
                                     inference_logits, label_function, mae, nearest_differently_labelled)
from advaudit.search.gad_attack import sign_gradient_attack
from advaudit.search.settings import PseudoModelConf
from advaudit.search.pseudo_model import extract_pseudo_model, latin_hypercube


def linear_model(d: int = 16, seed: int = 0) -> nn.Linear:
    """Two-class linear logits: class 1 iff ``w . x + b > 0``."""
    torch.manual_seed(seed)
    model = nn.Linear(d, 2)
    with torch.no_grad():
        model.weight[0] = 0
        model.bias[0] = 0
        model.bias[1] = -0.5 * float(model.weight[1].sum())  # boundary through the cube's centre
    return model


def test_batched_hop_skip_jump_approaches_the_exact_boundary_distance() -> None:
    model = linear_model()
    x = torch.rand(64, 16, generator=torch.Generator().manual_seed(1))
    labels = lambda b: model(b).argmax(1)  # noqa: E731
    with torch.no_grad():
        w, b = model.weight[1], model.bias[1]
        exact = (x @ w + b).abs() / w.norm()
        pool = torch.rand(400, 16, generator=torch.Generator().manual_seed(2))
        starts = nearest_differently_labelled(x, labels(x), pool, labels(pool))
        result = batched_hop_skip_jump(x, labels, starts, steps=12, gradient_queries=32, bounds=(0.0, 1.0))
    assert bool(result.ok.all())
    assert bool((labels(result.adversarial) != labels(x)).all())
    found = (result.adversarial - x).norm(dim=1)
    assert bool((found >= exact - 1e-4).all())            # never closer than the true boundary
    assert float((found / exact).median()) < 1.3           # and close to it after 12 steps
    start_ratio = float(((starts - x).norm(dim=1) / exact).median())
    assert start_ratio > 1.5                               # the attack, not the start, did the work
    assert torch.allclose(mae(x, x + 0.5), torch.full((64,), 0.5))


def test_no_differently_labelled_start_is_a_clear_error() -> None:
    x = torch.rand(3, 4)
    with pytest.raises(AdvauditError, match="nowhere to start"):
        nearest_differently_labelled(x, torch.zeros(3, dtype=torch.long), torch.rand(5, 4), torch.zeros(5, dtype=torch.long))


def test_foolbox_attack_marks_items_it_cannot_attack() -> None:
    class Constant(nn.Module):  # predicts class 0 everywhere: no adversarial exists
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.stack([torch.ones(len(x)), torch.zeros(len(x))], 1) + 0 * x.sum(1, keepdim=True)

    x = torch.rand(3, 4)
    result = foolbox_attack(x, Constant(), "boundary", steps=5)
    assert not bool(result.ok.any()) and bool(result.adversarial.isnan().all())
    model = linear_model(4)
    ok_result = foolbox_attack(torch.rand(6, 4, generator=torch.Generator().manual_seed(3)), model, "hop_skip_jump",
                               steps=3)
    assert bool(ok_result.ok.all())
    with pytest.raises(AdvauditError, match="unknown foolbox attack"):
        foolbox_attack(x, model, "carlini", steps=1)


def test_gad_sign_attack_flips_a_black_box_or_says_never() -> None:
    model = linear_model(4)
    black_box = lambda b: model(b).argmax(1)  # noqa: E731
    pseudo = lambda b: torch.softmax(model(b), 1)[:, 1]  # noqa: E731  a perfect pseudo model of class 1
    x = torch.rand(200, 4, generator=torch.Generator().manual_seed(4))
    x = x[black_box(x) == 1][:20]
    low, high = torch.zeros(4), torch.ones(4)
    result = sign_gradient_attack(x, black_box, pseudo, low, high, step=0.01, max_steps=300)
    assert bool(result.ok.all()) and bool((black_box(result.adversarial) == 0).all())
    assert bool((result.adversarial >= low).all() and (result.adversarial <= high).all())
    never = sign_gradient_attack(x, lambda b: torch.ones(len(b), dtype=torch.long), pseudo, low, high,
                                 step=0.01, max_steps=5)
    assert not bool(never.ok.any()) and bool(never.adversarial.isnan().all())
    with pytest.raises(AdvauditError, match="step > 0"):
        sign_gradient_attack(x, black_box, pseudo, low, high, step=0.0)


def test_pseudo_model_learns_a_smooth_black_box() -> None:
    data = torch.rand(300, 3, generator=torch.Generator().manual_seed(5)) * torch.tensor([1.0, 10.0, 100.0])
    black_box = lambda b: torch.sigmoid(3 * (b[:, 0] - 0.5) + 0.3 * (b[:, 1] - 5))  # noqa: E731
    design = latin_hypercube(data.min(0).values, data.max(0).values, 1000, seed=0)
    assert design.shape == (1000, 3)
    assert bool((design >= data.min(0).values).all() and (design <= data.max(0).values).all())
    model, r2 = extract_pseudo_model(black_box, data, PseudoModelConf(design_size=3000, hidden=[32, 32],
                                                                      epochs=15, lr=3e-3))
    assert r2 > 0.9
    with pytest.raises(AdvauditError, match="lhs, pool or neighbourhood"):
        extract_pseudo_model(black_box, data, PseudoModelConf(design="grid"))


def test_attack_box_is_the_data_box_not_each_pixels_observed_range() -> None:
    images = torch.rand(50, 1, 4, 4) * 0.6          # no pixel reaches 1, some never leave ~0
    images[:, 0, 0, 0] = 0.0
    low, high = attack_box(images)
    assert low.shape == (1, 4, 4) and bool((low == 0).all() and (high == 1).all())
    low, high = attack_box(images, "observed")
    assert float(high[0, 0, 0]) == 0.0 and float(high.max()) <= 0.6
    table = torch.tensor([[0.0, 10.0], [2.0, 30.0], [1.0, 20.0]])
    low, high = attack_box(table)                    # tables: each column's own range
    assert low.tolist() == [0.0, 10.0] and high.tolist() == [2.0, 30.0]
    low, high = attack_box(images, [-1, 2])
    assert bool((low == -1).all() and (high == 2).all())
    with pytest.raises(AdvauditError, match="outside the attack box"):
        attack_box(images + 1.0)
    with pytest.raises(AdvauditError, match="auto, observed"):
        attack_box(images, "pixels")


class ImageLinear(nn.Module):
    """Two-class linear model on ``[B, 1, 4, 4]`` images (class 1 iff ``w . x + b > 0``)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = linear_model(16)
        self.register_buffer("anchor", torch.zeros(()))  # gives the module a device

    @property
    def device(self) -> torch.device:
        return self.anchor.device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


def test_label_function_matches_argmax_in_small_batches_and_rejects_nan() -> None:
    model = ImageLinear()
    x = torch.rand(37, 1, 4, 4, generator=torch.Generator().manual_seed(6))
    labels = label_function(model, batch_size=8)
    assert torch.equal(labels(x), model(x).argmax(1))
    model.linear.bias.data[1] = float("nan")
    with pytest.raises(AdvauditError, match="NaN/inf"):
        labels(x)


def test_queries_fold_batchnorm_with_the_same_labels_and_leave_the_target_alone() -> None:
    torch.manual_seed(0)
    meta = {"arch": "cnn", "arch_params": {}, "class_names": ["a", "b", "c"], "input_shape": [3, 12, 12],
            "normalization": {"mean": [0.4, 0.5, 0.6], "std": [0.2, 0.25, 0.3]}}
    target = TorchTarget(build_net("advaudit.models.nets.SmallCNN", (3, 12, 12), 3, channels=(8, 16), hidden=16), meta)
    for module in target.modules():  # BatchNorm statistics far from the identity
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.3, 3.0)
            module.weight.data.uniform_(0.5, 2.0)
    target.eval().use_channels_last()
    x = torch.rand(300, 3, 12, 12, generator=torch.Generator().manual_seed(2))
    folded = inference_logits(target)
    with torch.inference_mode():
        assert torch.allclose(folded(x), target(x), atol=1e-5)
        assert torch.equal(label_function(target)(x), target(x).argmax(1))
    assert not any(isinstance(m, nn.BatchNorm2d) for m in folded.modules())
    assert sum(isinstance(m, nn.BatchNorm2d) for m in target.modules()) == 4  # the target keeps its BatchNorm
    assert inference_logits(target.train()) is target  # training mode: queried unchanged


def test_attack_items_stays_in_the_image_box_and_can_use_unobserved_pixel_values() -> None:
    model = ImageLinear()
    w, b = model.linear.weight[1].detach(), model.linear.bias[1].detach()
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(200, 1, 4, 4, generator=gen) * 0.5 + 0.25      # observed pixels only in [0.25, 0.75]
    with torch.no_grad():
        exact = (x.flatten(1) @ w + b).abs() / w.norm()
        predicted = model(x).argmax(1)
    result = attack_items(model, x[:40], x, predicted, attack_box(x), steps=10, gradient_queries=32)
    assert bool(result.ok.all())
    assert bool((result.adversarial >= 0).all() and (result.adversarial <= 1).all())
    assert bool((model(result.adversarial).argmax(1) != predicted[:40]).all())
    found = (result.adversarial - x[:40]).flatten(1).norm(dim=1)
    assert float((found / exact[:40]).median()) < 1.3
    outside = ((result.adversarial < 0.25) | (result.adversarial > 0.75)).any()
    assert bool(outside)  # the [0, 1] box, not the observed [0.25, 0.75], bounds the attack


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_attack_runs_on_the_targets_cuda_device() -> None:
    model = ImageLinear().cuda()
    x = torch.rand(64, 1, 4, 4, generator=torch.Generator().manual_seed(8))
    predicted = model(x.cuda()).argmax(1).cpu()
    result = attack_items(model, x[:16], x, predicted, attack_box(x), steps=4)
    assert result.adversarial.device.type == "cpu" and bool(result.ok.all())
    assert bool((model(result.adversarial.cuda()).argmax(1).cpu() != predicted[:16]).all())


def test_low_resolution_probes_find_a_smooth_boundary_with_fewer_queries() -> None:
    """A linear classifier on 28 x 28 images whose normal is smooth (a 4 x 4 pattern upsampled): with
    the same few probes, probes drawn on a 7 x 7 grid land closer to the exact boundary than
    full-resolution ones, and a table input refuses the option."""
    torch.manual_seed(0)
    pattern = torch.nn.functional.interpolate(torch.randn(1, 1, 4, 4), size=(28, 28), mode="bilinear").flatten()
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 2))
    with torch.no_grad():
        model[1].weight.zero_()
        model[1].weight[1] = pattern
        model[1].bias.zero_()
        model[1].bias[1] = -0.5 * float(pattern.sum())
    labels = lambda b: model(b).argmax(1)  # noqa: E731
    x = torch.rand(24, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    pool = torch.rand(300, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        exact = (x.flatten(1) @ pattern + model[1].bias[1]).abs() / pattern.norm()
        starts = nearest_differently_labelled(x, labels(x), pool, labels(pool))
        ratio = {}
        for resolution in (None, 7):
            result = batched_hop_skip_jump(x, labels, starts, steps=6, gradient_queries=16, max_gradient_queries=16,
                                           probe_resolution=resolution)
            assert bool(result.ok.all())
            found = (result.adversarial - x).flatten(1).norm(dim=1)
            assert bool((found >= exact - 1e-4).all())
            ratio[resolution] = float((found / exact).median())
    assert ratio[7] < 0.5 * ratio[None]  # measured: 1.5 vs 5.9 times the exact distance
    with pytest.raises(AdvauditError, match="probe_resolution"):
        batched_hop_skip_jump(torch.rand(4, 16), labels, torch.rand(4, 16), probe_resolution=7)
