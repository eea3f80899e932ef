"""Models trained elsewhere: each source and format gives the user's own scores, on real data.

Every model is built with random weights (nothing downloads) and checked against the model object
itself: the target's logits or probabilities must be the user's model's, through TorchScript,
torch.export, ONNX, a Lightning .ckpt, safetensors, skops and a trusted pickle, and again after
``advaudit import`` wrote them into one file.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from advaudit.data.fashion_mnist import FashionMNISTDataModule
from advaudit.errors import AdvauditError
from advaudit.models import TorchTarget, load_target, save_target
from advaudit.models.targets.formats import identify
from advaudit.models.targets.adapters import InputAdapter
from advaudit.models.targets.imported.spec import OTHER_CLASS, parse_target_spec
from advaudit.models.targets.imported.store import import_target
from tests.models.user_models import LitNet, brightness_votes

FMNIST_NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
NORM3 = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}


@pytest.fixture(scope="module")
def fmnist_images() -> torch.Tensor:
    """64 real Fashion-MNIST test images ``[64, 1, 28, 28]`` in [0, 1]."""
    dm = FashionMNISTDataModule(limit={"train": 10, "val": 10, "test": 64}, val_fraction=0.1)
    dm.setup()
    return dm.split("test").x


@pytest.fixture(scope="module")
def resnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[torch.nn.Module, Path]:
    """A torchvision ResNet-18 (its own 7x7 stem and max-pool), random weights, and its state_dict file."""
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).eval()
    path = tmp_path_factory.mktemp("resnet") / "resnet18_fmnist.pt"
    torch.save(model.state_dict(), path)
    return model, path


def resnet_block(path: Path, **extra: object) -> dict:
    return {"model": {"_target_": "torchvision.models.resnet18", "num_classes": 10}, "path": str(path),
            "class_names": FMNIST_NAMES, "input_shape": [3, 32, 32], "resize_from": [1, 28, 28],
            "normalization": NORM3, **extra}


def user_logits(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What the user computes by hand: grey -> RGB, 28 -> 32 px, normalise, forward."""
    x = F.interpolate(x.expand(-1, 3, -1, -1), size=(32, 32), mode="bilinear", antialias=True)
    with torch.no_grad():
        return model((x - 0.5) / 0.25)


def test_torchvision_state_dict_block_is_the_users_resnet(resnet, fmnist_images: torch.Tensor) -> None:
    model, path = resnet
    target = load_target(resnet_block(path))
    assert target.input_shape == (1, 28, 28) and target.class_names == FMNIST_NAMES
    expected = user_logits(model, fmnist_images)
    assert torch.allclose(target.logits(fmnist_images), expected, atol=1e-4)
    assert torch.allclose(target.predict_proba(fmnist_images), torch.softmax(expected, 1), atol=1e-5)
    grad_input = fmnist_images[:4].clone().requires_grad_()
    target.logits(grad_input)[:, 0].sum().backward()      # gradient audits (fault tests, PGD) reach the input
    assert grad_input.grad is not None and float(grad_input.grad.abs().sum()) > 0


def test_same_resnet_as_torchscript_export_and_onnx_files(resnet, fmnist_images: torch.Tensor, tmp_path: Path) -> None:
    model, _ = resnet
    example = torch.rand(4, 3, 32, 32)
    torch.jit.trace(model, example).save(str(tmp_path / "resnet.ts.pt"))
    torch.export.save(torch.export.export(model, (example,)), str(tmp_path / "resnet.pt2"))  # fixed batch of 4
    torch.onnx.export(model, (example,), str(tmp_path / "resnet.onnx"), dynamo=True,
                      dynamic_shapes={"x": {0: "batch"}}, verbose=False)
    expected = user_logits(model, fmnist_images)
    for name, kind in (("resnet.ts.pt", "torchscript"), ("resnet.pt2", "export"), ("resnet.onnx", "onnx")):
        file = tmp_path / name
        assert identify(file).kind == kind
        block = {k: v for k, v in resnet_block(file).items() if k != "model"}   # no code named: none needed
        target = load_target(block)
        assert torch.allclose(target.logits(fmnist_images), expected, atol=1e-3), name
        imported = import_target(block, tmp_path / f"imported_{kind}.pt")
        assert imported["backend"] == kind and imported["logit_gap"] < 1e-4
        again = load_target(tmp_path / f"imported_{kind}.pt")
        assert torch.allclose(again.logits(fmnist_images), expected, atol=1e-3), name
        assert again.meta["source"]["sha256"] == imported["sha256"]


def test_import_of_a_module_stores_a_code_free_program(resnet, fmnist_images: torch.Tensor, tmp_path: Path) -> None:
    model, path = resnet
    summary = import_target(resnet_block(path, temperature=1.5), tmp_path / "team.pt")
    assert summary["backend"] == "export" and summary["logit_gap"] < 1e-4
    payload = torch.load(tmp_path / "team.pt", weights_only=True)   # plain data and tensors only
    assert payload["meta"]["source"]["model"] == {"_target_": "torchvision.models.resnet18", "num_classes": 10}
    stored = load_target(tmp_path / "team.pt")
    assert float(stored.temperature) == 1.5 and stored.meta["input_shape"] == [1, 28, 28]
    assert torch.allclose(stored.predict_proba(fmnist_images), torch.softmax(user_logits(model, fmnist_images) / 1.5, 1),
                          atol=1e-4)


def test_lightning_checkpoint_by_class_and_by_inner_module(fmnist_images: torch.Tensor, tmp_path: Path) -> None:
    import pytorch_lightning as pl

    torch.manual_seed(1)
    lit = LitNet()
    data = torch.utils.data.TensorDataset(fmnist_images, torch.arange(64) % 10)
    trainer = pl.Trainer(max_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu", default_root_dir=tmp_path)
    trainer.fit(lit, torch.utils.data.DataLoader(data, batch_size=16))
    trainer.save_checkpoint(tmp_path / "user.ckpt")
    assert identify(tmp_path / "user.ckpt").kind == "lightning"
    lit.eval()
    with torch.no_grad():
        expected = lit(fmnist_images)
    common = {"path": str(tmp_path / "user.ckpt"), "class_names": FMNIST_NAMES, "input_shape": [1, 28, 28],
              "normalization": "model"}
    by_class = load_target({"lightning_module": "tests.models.user_models.LitNet", **common})
    by_module = load_target({"model": {"_target_": "tests.models.user_models.SmallNet"}, **common})  # 'net.' prefix
    for target in (by_class, by_module):
        assert torch.allclose(target.logits(fmnist_images), expected, atol=1e-5)


def test_timm_model_with_safetensors_weights(fmnist_images: torch.Tensor, tmp_path: Path) -> None:
    timm = pytest.importorskip("timm")
    from safetensors.torch import save_file

    torch.manual_seed(2)
    model = timm.create_model("resnet10t", pretrained=False, num_classes=10, in_chans=1).eval()
    save_file(model.state_dict(), str(tmp_path / "timm.safetensors"))
    target = load_target({"model": {"_target_": "timm.create_model", "model_name": "resnet10t",
                                          "pretrained": False, "num_classes": 10, "in_chans": 1},
                                "path": str(tmp_path / "timm.safetensors"), "class_names": FMNIST_NAMES,
                                "input_shape": [1, 28, 28], "normalization": {"mean": [0.3], "std": [0.35]}})
    with torch.no_grad():
        expected = model((fmnist_images - 0.3) / 0.35)
    assert torch.allclose(target.logits(fmnist_images), expected, atol=1e-4)


def test_random_forest_through_skops_and_a_trusted_pickle(tmp_path: Path) -> None:
    import skops.io as sio
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    x, y = load_wine(return_X_y=True)
    forest = RandomForestClassifier(n_estimators=15, random_state=0).fit(x, y)
    sio.dump(forest, tmp_path / "forest.skops")
    block = {"path": str(tmp_path / "forest.skops"), "class_names": ["class_0", "class_1", "class_2"],
             "input_shape": [13], "normalization": "model"}
    target = load_target(block)                    # trees are bounds-checked, then trusted
    assert np.allclose(target.predict_proba(torch.tensor(x, dtype=torch.float32)).numpy(),
                       forest.predict_proba(x.astype(np.float32)), atol=1e-6)
    forest.estimators_[0].tree_.children_left[0] = 10 ** 6   # a crafted file: a node pointing outside its tree
    sio.dump(forest, tmp_path / "crafted.skops")
    with pytest.raises(AdvauditError, match="points outside the tree"):
        load_target({**block, "path": str(tmp_path / "crafted.skops")})
    forest.estimators_[0].tree_.children_left[0] = RandomForestClassifier(n_estimators=15, random_state=0).fit(
        x, y).estimators_[0].tree_.children_left[0]
    with open(tmp_path / "forest.pkl", "wb") as handle:
        pickle.dump(forest, handle)
    with pytest.raises(AdvauditError, match="refusing to unpickle .*target.trusted=true"):
        load_target({**block, "path": str(tmp_path / "forest.pkl")})
    trusted = load_target({**block, "path": str(tmp_path / "forest.pkl"), "trusted": True})
    summary = import_target({**block, "path": str(tmp_path / "forest.pkl"), "trusted": True}, tmp_path / "forest.pt")
    assert summary["backend"] == "skops"                  # stored without pickle: safe to pass around
    stored = load_target(tmp_path / "forest.pt")
    features = torch.tensor(x[:40], dtype=torch.float32)
    assert torch.allclose(stored.predict_proba(features), trusted.predict_proba(features), atol=1e-6)


def test_prediction_function_as_a_black_box(fmnist_images: torch.Tensor) -> None:
    common = {"class_names": FMNIST_NAMES, "input_shape": [1, 28, 28], "normalization": "model", "array": "numpy"}
    target = load_target({"function": "tests.models.user_models.brightness_votes", **common})
    assert np.allclose(target.predict_proba(fmnist_images).numpy(), brightness_votes(fmnist_images.numpy()), atol=1e-5)
    sharper = load_target({"function": {"_target_": "tests.models.user_models.scaled_votes", "_partial_": True,
                                              "sharpness": 2.0}, **common})
    assert float(sharper.predict_proba(fmnist_images).max(1).values.mean()) > float(
        target.predict_proba(fmnist_images).max(1).values.mean())
    with pytest.raises(AdvauditError, match="cannot be stored in a file"):
        import_target({"function": "tests.models.user_models.brightness_votes", **common}, "/tmp/never.pt")


def test_class_map_sums_outputs_and_keeps_the_rest_as_other(resnet, fmnist_images: torch.Tensor) -> None:
    model, path = resnet
    block = resnet_block(path)
    block.pop("class_names")
    block["output_names"] = FMNIST_NAMES
    block["class_map"] = {"top": ["t-shirt", "pullover", "coat", "shirt"], "shoe": [5, 7, 9]}
    target = load_target(block)
    assert target.class_names == ["top", "shoe", OTHER_CLASS]
    p = torch.softmax(user_logits(model, fmnist_images), 1)
    mapped = target.predict_proba(fmnist_images)
    assert torch.allclose(mapped[:, 0], p[:, [0, 2, 4, 6]].sum(1), atol=1e-5)
    assert torch.allclose(mapped[:, 1], p[:, [5, 7, 9]].sum(1), atol=1e-5)
    assert torch.allclose(mapped[:, 2], p[:, [1, 3, 8]].sum(1), atol=1e-5)
    with pytest.raises(AdvauditError, match="did you mean 'sandal'"):
        load_target({**block, "class_map": {"shoe": ["sandals"]}})


def test_a_different_network_under_advaudits_architecture_name_is_refused(tmp_path: Path) -> None:
    """A torchvision ResNet-18 adapted to Fashion-MNIST as users do (a 3x3 grey stem, torchvision's max-pool
    kept) has exactly advaudit's parameter names and shapes, but advaudit's ResNet has no max-pool: saving it
    as arch=resnet18 would audit a different model. The logit gap is named and no file is left behind."""
    import torchvision

    torch.manual_seed(3)
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = torch.nn.Conv2d(1, 64, 3, stride=1, padding=1, bias=False)
    meta = {"arch": "resnet18", "arch_params": {}, "class_names": FMNIST_NAMES, "input_shape": [1, 28, 28],
            "normalization": {"mean": [0.3], "std": [0.35]}}
    with pytest.raises(AdvauditError, match=r"logits differ by up to \d"):
        save_target(TorchTarget(model, meta).eval(), tmp_path / "substituted.pt")
    assert not (tmp_path / "substituted.pt").exists()


def test_weights_that_do_not_fit_name_every_key(resnet) -> None:
    _, path = resnet
    block = resnet_block(path)
    block["model"] = {"_target_": "torchvision.models.resnet18", "num_classes": 5}
    block["class_names"] = FMNIST_NAMES[:5]
    with pytest.raises(AdvauditError) as error:
        load_target(block)
    message = str(error.value)
    assert "fc.weight [10, 512] vs [5, 512]" in message and "fc.bias [10] vs [5]" in message
    block["model"] = {"_target_": "torchvision.models.resnet34", "num_classes": 10}
    with pytest.raises(AdvauditError, match=r"missing: .*layer1\.2\.conv1\.weight"):
        load_target(resnet_block(path, model=block["model"]))


def test_block_mistakes_are_one_line_with_the_fix(resnet) -> None:
    _, path = resnet
    with pytest.raises(AdvauditError, match="did you mean target.class_names"):
        parse_target_spec({**resnet_block(path), "class_name": ["a"]})
    with pytest.raises(AdvauditError, match="target.normalization is required"):
        parse_target_spec({k: v for k, v in resnet_block(path).items() if k != "normalization"})
    with pytest.raises(AdvauditError, match="gives 10 scores per input but target.class_names has 3"):
        load_target(resnet_block(path, class_names=["a", "b", "c"]))
    with pytest.raises(AdvauditError, match="does not run on inputs of shape"):
        load_target({**resnet_block(path), "input_shape": [1, 32, 32], "normalization": "model"})


def test_imported_logits_skip_only_an_identity_normalisation(resnet, fmnist_images: torch.Tensor) -> None:
    """The imported target's own normalisation is the identity (the pipeline's adapter normalises), so
    ``logits`` skips it: the same numbers, bit for bit, as applying it; the adapter's in-place division
    gives its out-of-place numbers."""
    _, path = resnet
    target = load_target(resnet_block(path))
    assert float(target.mean.abs().max()) == 0.0 and bool((target.std == 1).all())
    with torch.no_grad():
        assert torch.equal(target.logits(fmnist_images), target.net((fmnist_images - target.mean) / target.std))
    adapter = InputAdapter([3, 32, 32], None, NORM3)
    x = torch.rand(4, 3, 32, 32)
    assert torch.equal(adapter(x), (x - adapter.mean) / adapter.std)
