"""Architectures, calibration and the target interface."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from advaudit.errors import AdvauditError
from advaudit.models.targets.calibration import expected_calibration_error, fit_temperature
from advaudit.models.training.classifier import pgd_attack
from advaudit.models.nets import LEGACY_NAMES, MLP, build_net, checkpoint_architecture, split_arch
from advaudit.models.targets.target import TorchTarget
from tests.conftest import CONF_DIR


@pytest.mark.parametrize("model,shape", [("cnn", (1, 28, 28)), ("resnet18", (3, 32, 32)), ("resnet34", (3, 32, 32)),
                                         ("alexnet", (3, 64, 64)), ("alexnet", (1, 28, 28)), ("mlp", (13,))])
def test_each_model_option_names_an_architecture_that_gives_logits(model: str, shape: tuple[int, ...]) -> None:
    arch, params = split_arch(OmegaConf.load(CONF_DIR / "model" / f"{model}.yaml").arch)
    assert arch == LEGACY_NAMES[model] and "_partial_" not in params
    if model.startswith(("resnet", "alexnet")):
        params["width"] = 8
    net = build_net(arch, shape, 7, **params).eval()
    assert net(torch.rand(2, *shape)).shape == (2, 7)


def test_unknown_architecture_and_bad_params() -> None:
    with pytest.raises(AdvauditError, match=r"^model.arch._target_=advaudit.models.nets.ViT cannot be imported"):
        build_net("advaudit.models.nets.ViT", (1, 28, 28), 10)
    with pytest.raises(AdvauditError, match=r"^model.arch has unknown keys \['depth'\] .*SmallCNN takes these "):
        build_net("advaudit.models.nets.SmallCNN", (1, 28, 28), 10, depth=3)
    with pytest.raises(AdvauditError, match=r"did you mean model.arch.width for model.arch.widht"):
        build_net("advaudit.models.nets.resnet18", (3, 32, 32), 10, widht=8)
    with pytest.raises(AdvauditError, match="built a Tensor, not a torch.nn.Module"):
        build_net("tests.models.test_models.not_a_net", (4,), 2)
    with pytest.raises(AdvauditError, match="needs image input"):
        build_net("advaudit.models.nets.SmallCNN", (13,), 2)
    with pytest.raises(AdvauditError, match="must be a block naming the architecture"):
        split_arch("cnn")


def not_a_net(input_shape: tuple[int, ...], num_classes: int) -> torch.Tensor:
    """A builder that returns no module."""
    return torch.zeros(num_classes)


@pytest.mark.parametrize("name,cls", [("cnn", "SmallCNN"), ("mlp", "MLP"), ("alexnet", "SmallAlexNet"),
                                      ("resnet18", "ScaledResNet"), ("resnet34", "ScaledResNet")])
def test_checkpoints_naming_an_architecture_the_old_way_rebuild_the_same_one(name: str, cls: str) -> None:
    meta = {"arch": name, "arch_params": {"width": 4} if "net" in name else {}}
    arch, params = checkpoint_architecture(meta, "old.pt")
    assert arch == f"advaudit.models.nets.{cls if cls != 'ScaledResNet' else name}"
    shape = (1, 28, 28) if name != "mlp" else (5,)
    assert type(build_net(arch, shape, 3, **params)).__name__ == cls


def test_a_checkpoint_names_an_architecture_outside_advaudit_only_with_the_config() -> None:
    meta = {"arch": "my_nets.TinyNet", "arch_params": {"hidden": 3}}
    with pytest.raises(AdvauditError, match=r"^run/target.pt was trained with architecture my_nets.TinyNet, which is "
                       r"not advaudit's own; .*name it in your config: "
                       r"target=\{path: run/target.pt, architecture: my_nets.TinyNet\}$"):
        checkpoint_architecture(meta, "run/target.pt")
    with pytest.raises(AdvauditError, match=r"your config names other_nets.TinyNet"):
        checkpoint_architecture(meta, "run/target.pt", ["other_nets.TinyNet"])
    assert checkpoint_architecture(meta, "run/target.pt", ["my_nets.TinyNet"]) == ("my_nets.TinyNet", {"hidden": 3})
    with pytest.raises(AdvauditError, match=r"names architecture 'vit', which is not one of advaudit's"):
        checkpoint_architecture({"arch": "vit"}, "run/target.pt")
    # a helper of advaudit's architecture module is not an architecture: build_net would import what its
    # ``target`` parameter names, so a file naming it is refused like any other code
    with pytest.raises(AdvauditError, match=r"architecture advaudit.models.nets.build_net, which is not advaudit"):
        checkpoint_architecture({"arch": "advaudit.models.nets.build_net", "arch_params": {"target": "os.system"}},
                                "run/target.pt")


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
    return TorchTarget(MLP(shape, 3), meta, temperature=2.0).eval()


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
