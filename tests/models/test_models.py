"""Architectures, calibration and the target interface."""

from __future__ import annotations

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.models.calibration import expected_calibration_error, fit_temperature
from advaudit.models.classifier import pgd_attack
from advaudit.models.nets import ARCHITECTURES, build_net
from advaudit.models.target import TorchTarget


@pytest.mark.parametrize("arch,shape", [("cnn", (1, 28, 28)), ("resnet18", (3, 32, 32)), ("resnet34", (3, 32, 32)),
                                        ("alexnet", (3, 64, 64)), ("alexnet", (1, 28, 28)), ("mlp", (13,))])
def test_architectures_give_logits_for_their_inputs(arch: str, shape: tuple[int, ...]) -> None:
    params = {"width": 8} if arch.startswith(("resnet", "alexnet")) else {}
    net = build_net(arch, shape, 7, **params).eval()
    assert net(torch.rand(2, *shape)).shape == (2, 7)


def test_unknown_architecture_and_bad_params() -> None:
    with pytest.raises(AdvauditError, match="unknown architecture 'vit'"):
        build_net("vit", (1, 28, 28), 10)
    with pytest.raises(AdvauditError, match="bad parameters for architecture 'cnn'"):
        build_net("cnn", (1, 28, 28), 10, depth=3)
    with pytest.raises(AdvauditError, match="needs image input"):
        build_net("cnn", (13,), 2)
    assert {"cnn", "resnet18", "resnet34", "alexnet", "mlp"} <= set(ARCHITECTURES)


def test_fit_temperature_recovers_a_known_temperature() -> None:
    generator = torch.Generator().manual_seed(0)
    true_logits = torch.randn(20_000, 5, generator=generator) * 3
    y = torch.multinomial(true_logits.softmax(1), 1, generator=generator).squeeze(1)
    overconfident = true_logits * 2.5  # a model whose logits are 2.5x too large
    assert fit_temperature(overconfident, y) == pytest.approx(2.5, rel=0.05)


def test_ece_known_answers() -> None:
    probs = torch.tensor([[0.9, 0.1]] * 10)
    y = torch.tensor([0] * 9 + [1])
    assert expected_calibration_error(probs, y) == pytest.approx(0.0, abs=1e-6)  # 90% right at 0.9
    assert expected_calibration_error(probs, torch.zeros(10, dtype=torch.long)) == pytest.approx(0.1)


def _target(shape: tuple[int, ...] = (1, 8, 8)) -> TorchTarget:
    meta = {"arch": "mlp", "arch_params": {}, "class_names": ["a", "b", "c"], "input_shape": list(shape),
            "normalization": {"mean": [0.5], "std": [0.25]}}
    return TorchTarget(build_net("mlp", shape, 3), meta, temperature=2.0).eval()


def test_target_normalises_calibrates_and_checks_shapes() -> None:
    target = _target()
    x = torch.rand(4, 1, 8, 8)
    assert torch.allclose(target.logits(x), target.net((x - 0.5) / 0.25))
    assert torch.allclose(target.predict_proba(x), (target.logits(x) / 2.0).softmax(1))
    with pytest.raises(AdvauditError, match=r"does not fit the target, which takes \[1, 8, 8\]"):
        target.predict_proba(torch.rand(4, 3, 8, 8))


def test_nan_from_a_model_is_named() -> None:
    target = _target()
    with torch.no_grad():
        target.net.body[1].weight.fill_(float("nan"))
    with pytest.raises(AdvauditError, match="returned NaN"):
        target.predict_proba(torch.rand(2, 1, 8, 8))


@pytest.mark.parametrize("norm,eps", [("linf", 0.05), ("l2", 0.5)])
def test_pgd_stays_in_the_ball_and_raises_the_loss(norm: str, eps: float) -> None:
    torch.manual_seed(0)
    target = _target()
    x, y = torch.rand(16, 1, 8, 8), torch.randint(0, 3, (16,))
    adv = pgd_attack(target, x, y, eps=eps, steps=10, norm=norm)
    delta = (adv - x).flatten(1)
    size = delta.abs().max(1).values if norm == "linf" else delta.norm(dim=1)
    assert bool((size <= eps + 1e-5).all()) and 0 <= float(adv.min()) and float(adv.max()) <= 1
    loss = lambda z: torch.nn.functional.cross_entropy(target.logits(z), y)  # noqa: E731
    assert float(loss(adv)) > float(loss(x))
