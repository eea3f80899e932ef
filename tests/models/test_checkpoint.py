"""Self-describing, safely loaded checkpoints: round trips and every way a file can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advaudit.data.sklearn_sets import TabularDataModule
from advaudit.errors import AdvauditError
from advaudit.models import SklearnTarget, load_target, save_target
from advaudit.models.targets.formats.checkpoint import load_checkpoint, save_checkpoint
from advaudit.models.training.sklearn_training import make_estimator


class NotPlainData:
    """A class a pickle would need code to rebuild."""


def test_torch_round_trip_gives_identical_predictions(tiny_fmnist_target: Path) -> None:
    from advaudit.data.fashion_mnist import FashionMNISTDataModule

    target = load_target(tiny_fmnist_target)
    again = load_target(tiny_fmnist_target)
    x = FashionMNISTDataModule(limit={"train": 10}).split("test").x[:64]
    assert torch.equal(target.predict_proba(x), again.predict_proba(x))
    path = save_target(target, tiny_fmnist_target.parent / "copy.pt")
    assert torch.equal(load_target(path).logits(x), target.logits(x))
    assert target.class_names[0] == "t-shirt" and target.input_shape == (1, 28, 28)
    assert float(target.temperature) > 0 and target.meta["config"]["model"]["name"] == "cnn"
    assert target.meta["arch"] == "advaudit.models.nets.SmallCNN" and target.meta["arch_params"]["channels"] == [32, 64]


SVM = {"_target_": "sklearn.svm.SVC", "_partial_": True, "probability": True}
LOGREG = {"_target_": "sklearn.linear_model.LogisticRegression", "_partial_": True, "max_iter": 2000}


@pytest.mark.parametrize("estimator", ["svm", "logreg"])
def test_sklearn_round_trip_gives_identical_predictions(tmp_path: Path, estimator: str) -> None:
    dm = TabularDataModule(name="breast_cancer")
    train = dm.split("train")
    norm = dm.normalization()
    meta = {"arch": estimator, "class_names": dm.class_names, "input_shape": [30], "normalization": norm}
    mean, std = torch.tensor(norm["mean"]), torch.tensor(norm["std"])
    block = {"svm": SVM, "logreg": LOGREG}[estimator]
    model = make_estimator(block, seed=0).fit(((train.x - mean) / std).numpy(), train.y.numpy())
    target = SklearnTarget(model, meta)
    loaded = load_target(save_target(target, tmp_path / "t.pt"))
    x = dm.split("test").x
    assert torch.equal(loaded.predict_proba(x), target.predict_proba(x))
    assert float((loaded.predict_proba(x).argmax(1) == dm.split("test").y).float().mean()) > 0.9


def test_an_estimator_block_is_built_with_the_seed_and_refused_when_a_target_file_cannot_store_it() -> None:
    estimator = make_estimator({**SVM, "C": 3.0}, seed=7)
    assert (type(estimator).__name__, estimator.C, estimator.probability, estimator.random_state) == ("SVC", 3.0, True, 7)
    with pytest.raises(AdvauditError, match="builds a DecisionTreeClassifier, which a target file cannot store; "
                                            r"use one of \['LogisticRegression', 'SVC'\]"):
        make_estimator({"_target_": "sklearn.tree.DecisionTreeClassifier", "_partial_": True}, seed=0)
    with pytest.raises(AdvauditError, match="did you mean"):
        make_estimator({**SVM, "kernal": "rbf"}, seed=0)
    with pytest.raises(AdvauditError, match="random_state is supplied by training"):
        make_estimator({**SVM, "random_state": 1}, seed=0)
    with pytest.raises(AdvauditError, match=r"^model.estimator must be a block naming the estimator, "
                                            r"\{_target_: <a scikit-learn class>"):
        make_estimator("svm", seed=0)  # the name an older config gave


def test_missing_corrupt_foreign_and_unsafe_files(tmp_path: Path) -> None:
    with pytest.raises(AdvauditError, match="does not exist"):
        load_target(tmp_path / "nope.pt")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a torch file at all")
    with pytest.raises(AdvauditError, match="is a text file"):
        load_target(corrupt)
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {}}, foreign)
    with pytest.raises(AdvauditError, match="not an advaudit checkpoint"):
        load_target(foreign)
    unsafe = tmp_path / "unsafe.pt"
    torch.save({"format": "advaudit", "kind": "target", "payload": NotPlainData()}, unsafe)
    with pytest.raises(AdvauditError, match="refusing to load"):
        load_target(unsafe)
    other_kind = save_checkpoint(tmp_path / "gen.pt", {"kind": "generator"})
    with pytest.raises(AdvauditError, match="is a 'generator' checkpoint"):
        load_target(other_kind)
    assert load_checkpoint(other_kind)["kind"] == "generator"


def test_checkpoint_of_another_architecture_is_named(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    payload = torch.load(tiny_fmnist_target, weights_only=True)
    payload["meta"]["arch_params"]["channels"] = [16, 32]
    tampered = tmp_path / "tampered.pt"
    torch.save(payload, tampered)
    with pytest.raises(AdvauditError, match="do not match architecture 'advaudit.models.nets.SmallCNN'"):
        load_target(tampered)
