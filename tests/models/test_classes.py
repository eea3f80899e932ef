"""Classes are paired by name: known pairings, refusals with the closest names, and targets whose outputs follow."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from advaudit.errors import AdvauditError
from advaudit.models.targets.classes import OTHER_CLASS, align_classes, align_target, normalise_class_name
from advaudit.models.targets.adapters import InputAdapter
from advaudit.models.targets.imported.targets import BlackBoxTarget
from advaudit.models.targets.target import SklearnTarget, TorchTarget

DATA = ["t-shirt", "trouser", "pullover", "ankle-boot"]


def test_names_are_compared_after_one_normalisation() -> None:
    assert {normalise_class_name(n) for n in ("T-shirt", "t_shirt", " t  shirt ", "T - SHIRT")} == {"t-shirt"}
    assert normalise_class_name("ankle-boot") != normalise_class_name("boot")


def test_a_permuted_list_is_paired_by_name_with_the_columns_that_undo_it() -> None:
    model = ["Trouser", "ankle boot", "T_shirt", "pullover"]
    alignment = align_classes(model, DATA)
    assert alignment.columns == (2, 0, 3, 1)                       # data class k is model output columns[k]
    assert [model[c] for c in alignment.columns] == ["T_shirt", "Trouser", "pullover", "ankle boot"]
    assert alignment.data_names == tuple(DATA) and alignment.matched == "name"
    assert "reordered" in alignment.describe()


def test_a_class_maps_other_output_stays_last() -> None:
    alignment = align_classes(["trouser", "t-shirt", "ankle-boot", "pullover", OTHER_CLASS], DATA)
    assert alignment.columns == (1, 0, 3, 2, 4) and alignment.data_names[-1] == OTHER_CLASS


def test_a_misspelt_or_renamed_class_is_refused_with_the_closest_names() -> None:
    with pytest.raises(AdvauditError, match=r"the target's class 'boot' is not a class of the world \(closest: "
                                            r"'ankle-boot'\); .*class_alignment=\{boot: ankle-boot\}"):
        align_classes(["t-shirt", "trouser", "pullover", "boot"], DATA, data_label="the world")
    with pytest.raises(AdvauditError, match="the target predicts no class 'ankle-boot' of the data"):
        align_classes(["t-shirt", "trouser", "pullover"], DATA)
    with pytest.raises(AdvauditError, match="'trouser' and 'Trouser', which are one name"):
        align_classes(["trouser", "Trouser", "pullover", "ankle-boot"], DATA)
    with pytest.raises(AdvauditError, match="class_alignment names model class 'bot', which is not one of the "
                                            "target's classes; did you mean 'boot'"):
        align_classes(["t-shirt", "trouser", "pullover", "boot"], DATA, {"bot": "ankle-boot"})
    with pytest.raises(AdvauditError, match=r"class_alignment\[boot\] names class 'ankle', .* did you mean 'ankle-boot'"):
        align_classes(["t-shirt", "trouser", "pullover", "boot"], DATA, {"boot": "ankle"})


def test_a_rename_and_pairing_by_position_happen_only_when_asked_and_are_said() -> None:
    renamed = align_classes(["boot", "t-shirt", "trouser", "pullover"], DATA, {"boot": "ankle-boot"})
    assert renamed.columns == (1, 2, 3, 0) and renamed.pairs["boot"] == "ankle-boot"
    assert "renamed: boot as ankle-boot" in renamed.describe()
    by_position = align_classes(["a", "b", "c", "d"], DATA, match="position")
    assert by_position.columns == (0, 1, 2, 3) and by_position.pairs == dict(zip("abcd", DATA))
    assert by_position.describe().startswith("classes paired by position, as the target block asks")


def _torch_target(names: list[str], weight: torch.Tensor) -> TorchTarget:
    net = torch.nn.Linear(3, len(names))
    with torch.no_grad():
        net.weight.copy_(weight)
        net.bias.zero_()
    meta = {"class_names": names, "input_shape": [3], "normalization": {"mean": [0.0] * 3, "std": [1.0] * 3}}
    return TorchTarget(net, meta).eval()


def test_a_permuted_torch_target_scores_each_class_as_the_ordered_one_does() -> None:
    generator = torch.Generator().manual_seed(0)
    weight, x = torch.randn(4, 3, generator=generator), torch.randn(32, 3, generator=generator)
    ordered = _torch_target(DATA, weight)
    permutation = [3, 0, 2, 1]   # the user's output j is the data's class permutation[j]
    permuted = align_target(_torch_target([DATA[p] for p in permutation], weight[permutation]), DATA, "the world")
    assert permuted.class_names == DATA
    assert torch.allclose(permuted.predict_proba(x), ordered.predict_proba(x), atol=1e-6)
    x.requires_grad_(True)
    permuted.logits(x)[:, 1].sum().backward()      # gradients follow the data's order too
    assert torch.allclose(x.grad, weight[1].expand_as(x), atol=1e-6)
    record = permuted.meta["class_alignment"]
    assert record["columns"] == [1, 3, 2, 0] and permuted.meta["model_class_names"][0] == "ankle-boot"
    again = align_target(permuted, DATA)           # a second pairing with the same data changes nothing
    assert again.meta["class_alignment"] == record and torch.allclose(again.predict_proba(x), ordered.predict_proba(x))


def test_black_boxes_reorder_their_scores() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    y = np.arange(40) % 4
    meta = {"class_names": DATA, "input_shape": [3], "normalization": {"mean": [0.0] * 3, "std": [1.0] * 3}}
    estimator = LogisticRegression().fit(x, y)
    ordered = SklearnTarget(estimator, meta)
    flipped = align_target(SklearnTarget(estimator, {**meta, "class_names": DATA[::-1]}), DATA)
    inputs = torch.tensor(x, dtype=torch.float32)
    assert torch.allclose(flipped.predict_proba(inputs), ordered.predict_proba(inputs).flip(1), atol=1e-6)

    def scores(batch: torch.Tensor) -> torch.Tensor:
        return torch.stack([batch[:, 0], batch[:, 1], -batch[:, 0], batch[:, 2]], 1)

    adapter = InputAdapter([3], None, "model")
    box = BlackBoxTarget(scores, adapter, "logits", None, {**meta, "class_names": ["trouser", "T-shirt", "Ankle Boot",
                                                                                    "pullover"]}, array="torch")
    aligned = align_target(box, DATA)
    expected = torch.softmax(scores(inputs)[:, [1, 0, 3, 2]], 1)
    assert aligned.class_names == DATA and torch.allclose(aligned.predict_proba(inputs), expected, atol=1e-6)
