"""The documented recipes for models trained elsewhere, piece by piece: a dataset option named in a
target block, scoring from Python, fixed-batch ``torch.export`` archives at full speed, the report
budgets of a small budget, and the one-line answers to a mistyped name, a damaged ONNX file and a
table model's file given as a path."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import advaudit
from advaudit.audits.common import target_datamodule
from advaudit.confutil import locate
from advaudit.data.sklearn_sets import TabularDataModule
from advaudit.errors import AdvauditError
from advaudit.models.targets.formats import how_to_audit, identify
from advaudit.models.targets.formats.export import FixedBatch
from advaudit.models.targets.formats.onnx import onnx_bytes
from advaudit.models.targets.imported.spec import named_dataset, parse_target_spec
from advaudit.models.targets.imported.store import import_target
from advaudit.models import load_target

BREAST_CANCER = ["malignant", "benign"]


class MyTable(TabularDataModule):
    """A user's own datamodule (outside advaudit.data), named by a target block in the user's config."""


@pytest.fixture(scope="module")
def cancer_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    """A logistic regression on the bundled breast-cancer table (``dataset: tabular``'s default), as skops."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    table = TabularDataModule(name="breast_cancer")
    table.setup()
    train = table.split("train")
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(train.x.numpy(), train.y.numpy())
    path = tmp_path_factory.mktemp("cancer") / "cancer.skops"
    sio.dump(model, path)
    return model, path


def cancer_block(path: Path, **extra: object) -> dict:
    return {"path": str(path), "class_names": BREAST_CANCER, "input_shape": [30], "normalization": "model", **extra}


# -- a conf/dataset option named in a target block ----------------------------------------------------
def test_a_dataset_option_is_composed_by_hydra_with_its_schema() -> None:
    fmnist = named_dataset("fashion_mnist", seed=3)
    assert fmnist["_target_"] == "advaudit.data.fashion_mnist.FashionMNISTDataModule" and fmnist["seed"] == 3
    assert fmnist["root"] == "/usr/share/datasets/fashion-mnist" and fmnist["val_fraction"] == 0.1  # schema defaults
    table = named_dataset("tabular", seed=0)
    assert table["_target_"] == "advaudit.data.sklearn_sets.TabularDataModule" and table["name"] == "breast_cancer"
    with pytest.raises(AdvauditError, match=r"^target.dataset='fashon_mnist' is not a dataset option; did you mean "
                                            r"target.dataset=fashion_mnist\? use one of \['digits', 'fashion_mnist'"):
        named_dataset("fashon_mnist", seed=0)


def test_a_users_own_dataset_option_is_found_on_the_runs_search_path(tmp_path: Path) -> None:
    """Inside a Hydra run (``--config-dir my_conf``) the run's own options count, as for ``dataset=``."""
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "wine_table.yaml").write_text("defaults: [tabular_schema, _self_]\nname: wine\nseed: ${seed}\n")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
            block = named_dataset("wine_table", seed=5)
    finally:
        GlobalHydra.instance().clear()
    assert block["name"] == "wine" and block["seed"] == 5 and block["_target_"].startswith("advaudit.data.")


def test_a_block_and_its_imported_file_audit_on_the_dataset_option_they_name(cancer_model, tmp_path: Path) -> None:
    model, path = cancer_model
    block = cancer_block(path, dataset="tabular")
    expected = TabularDataModule(name="breast_cancer")
    expected.setup()
    test = expected.split("test")
    for target in (load_target(block), load_target(import_target(block, tmp_path / "cancer.pt")["path"])):
        data = target_datamodule(target)
        assert data.class_names == BREAST_CANCER and torch.equal(data.split("test").x, test.x)
        probs = target.predict_proba(data.split("test").x)
        assert np.allclose(probs.numpy(), model.predict_proba(test.x.numpy()), atol=1e-6)


def test_a_users_dataset_class_runs_from_a_block_never_from_a_file(cancer_model, tmp_path: Path) -> None:
    """Code runs where the user's config names it: a block may name the user's datamodule; a file that
    stores the same ``_target_`` is refused."""
    _, path = cancer_model
    block = cancer_block(path, dataset={"_target_": f"{__name__}.MyTable", "name": "breast_cancer"})
    assert isinstance(target_datamodule(load_target(block)), MyTable)
    import_target(block, tmp_path / "mine.pt")
    with pytest.raises(AdvauditError, match="a file never makes advaudit import code"):
        target_datamodule(load_target(tmp_path / "mine.pt"))


# -- scoring from Python ------------------------------------------------------------------------------
def test_load_target_scores_raw_inputs_from_a_block_a_yaml_file_and_an_imported_file(cancer_model,
                                                                                     tmp_path: Path) -> None:
    model, path = cancer_model
    table = TabularDataModule(name="breast_cancer")
    table.setup()
    x = table.split("test").x[:20]
    expected = model.predict_proba(x.numpy())
    (tmp_path / "cancer.yaml").write_text(f"target:\n  path: {path}\n  class_names: [malignant, benign]\n"
                                          "  input_shape: [30]\n  normalization: model\n")
    import_target(cancer_block(path), tmp_path / "cancer.pt")
    for given in (cancer_block(path), tmp_path / "cancer.yaml", str(tmp_path / "cancer.pt")):
        target = advaudit.load_target(given)
        assert target.class_names == BREAST_CANCER and tuple(target.input_shape) == (30,)
        assert np.allclose(target.predict_proba(x).numpy(), expected, atol=1e-6), given
    with pytest.raises(AdvauditError, match="load_target takes a path or a target block"):
        advaudit.load_target(3)  # type: ignore[arg-type]


# -- torch.export archives with a fixed batch ---------------------------------------------------------
def small_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 13 * 13, 10)).eval()


def fixed_batch_target(net: torch.nn.Module, path: Path, batch: int = 4):
    torch.export.save(torch.export.export(net, (torch.rand(batch, 1, 28, 28),)), path)
    return load_target({"path": str(path), "class_names": [str(i) for i in range(10)],
                              "input_shape": [1, 28, 28], "normalization": "model"})


def scores_in_one_call(target, module: torch.nn.Module, net: torch.nn.Module) -> None:
    """On 11 inputs (not a multiple of the exported 4): the module's scores, in one call, with its gradients."""
    x = torch.rand(11, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    calls = []
    hook = module.register_forward_hook(lambda *args: calls.append(1))
    with torch.no_grad():
        assert torch.allclose(target.logits(x), net(x), atol=1e-5)
    hook.remove()
    assert len(calls) == 1
    x.requires_grad_()
    target.logits(x)[:, 3].sum().backward()                    # gradient audits reach the input
    reference = x.detach().clone().requires_grad_()
    net(reference)[:, 3].sum().backward()
    assert torch.allclose(x.grad, reference.grad, atol=1e-5)


def test_a_fixed_batch_archive_is_re_exported_with_a_dynamic_batch(tmp_path: Path) -> None:
    net = small_cnn()
    target = fixed_batch_target(net, tmp_path / "b4.pt2")
    module = target.net.model
    assert not isinstance(module, FixedBatch)
    placeholder = next(n for n in module.graph.nodes if n.op == "placeholder")
    assert not isinstance(placeholder.meta["val"].shape[0], int)      # the batch is symbolic now
    scores_in_one_call(target, module, net)


class PinnedBatch(torch.nn.Module):
    """A network whose graph needs its batch size: ``view(4, -1)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = small_cnn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net[5](self.net[:4](x).view(4, -1))


def test_a_graph_that_needs_its_batch_runs_all_chunks_in_one_vmap_call(tmp_path: Path) -> None:
    net = PinnedBatch().eval()
    target = fixed_batch_target(net, tmp_path / "pinned.pt2")
    fixed = target.net.model
    assert isinstance(fixed, FixedBatch) and fixed.batch == 4 and fixed.batched

    class ByChunks(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([net(c) for c in torch.cat([x, x[-1:].expand(1, 1, 28, 28)]).split(4)])[:len(x)]

    scores_in_one_call(target, fixed.module, ByChunks())


class NumpyOnly(torch.nn.Module):
    """Takes exactly 4 inputs and leaves torch for numpy (which ``vmap`` cannot trace)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.randn(3, 2, generator=torch.Generator().manual_seed(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert len(x) == 4
        return torch.as_tensor(x.detach().numpy() @ self.weight.numpy())


def test_a_program_vmap_cannot_run_runs_chunk_by_chunk_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    module = NumpyOnly()
    with caplog.at_level(logging.WARNING):
        fixed = FixedBatch(module, [4, 3], "target.path=net.pt2")
    assert not fixed.batched
    assert "target.path=net.pt2 was exported for a fixed batch of 4 inputs" in caplog.text
    assert "dynamic_shapes" in caplog.text
    x = torch.rand(6, 3)
    assert torch.allclose(fixed(x), x @ module.weight, atol=1e-6)


# -- report budgets follow a small budget -------------------------------------------------------------
def test_default_report_budgets_follow_the_budget(make_cfg) -> None:
    from advaudit.config import typed
    from advaudit.audits.settings import WorstCaseAuditConf
    from advaudit.validation import validate

    assert typed(WorstCaseAuditConf, {}).report_budgets == [0, 100, 300, 500]
    assert typed(WorstCaseAuditConf, {"budget": 60}).report_budgets == [0, 60]
    assert typed(WorstCaseAuditConf, {"budget": 1000}).report_budgets == [0, 100, 300, 500, 1000]
    assert typed(WorstCaseAuditConf, {"budget": 60, "report_budgets": [0, 30]}).report_budgets == [0, 30]
    block = "{function:tests.models.user_models.brightness_votes,class_names:[a],input_shape:[1],normalization:model}"
    cfg = make_cfg("examine", [f"target={block}", "audit.budget=200"])
    validate(cfg, "examine")                                  # no report budget beyond the budget
    assert list(cfg.audit.report_budgets) == [0, 100, 200]


# -- one line for each mistake ------------------------------------------------------------------------
def test_a_mistyped_dotted_name_is_one_line_with_the_closest_name() -> None:
    assert locate("tests.models.user_models.brightness_votes", "target.function").__name__ == "brightness_votes"
    cases = {
        "tests.models.user_models.brightnes_votes": "did you mean target.function=tests.models.user_models.brightness_votes?",
        "tests.models.user_modles.brightness_votes": "did you mean target.function=tests.models.user_models.brightness_votes?",
        "torchvison.models.resnet18": "did you mean target.function=torchvision.models.resnet18? (or put the folder "
                                      "that holds torchvison on PYTHONPATH)",
        "zz_no_pkg_qq.predict": "No module named 'zz_no_pkg_qq'); correct target.function (or put the folder that "
                                "holds zz_no_pkg_qq on PYTHONPATH)",
        "brightness_votes": "name its module too, target.function=<module>.brightness_votes (the module importable "
                            "from PYTHONPATH)",
    }
    for path, fix in cases.items():
        with pytest.raises(AdvauditError) as error:
            locate(path, "target.function")
        line = str(error.value)
        assert line.startswith(f"target.function={path} cannot be imported (") and line.endswith(fix), line
        assert "\n" not in line
    block = {"function": "tests.models.user_models.brightness_votes", "class_names": ["a"], "input_shape": [1],
             "normalization": "model", "dataset": {"_target_": "advaudit.data.sklearn_sets.TabularDataModul"}}
    with pytest.raises(AdvauditError, match=r"did you mean target.dataset._target_=advaudit.data.sklearn_sets."
                                            r"TabularDataModule\?$"):
        parse_target_spec(block)


def test_onnx_damage_is_told_apart_from_a_missing_data_file(tmp_path: Path) -> None:
    import onnx

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    torch.onnx.export(net, (torch.rand(2, 12),), str(tmp_path / "whole.onnx"), dynamo=False)
    model = onnx.load(str(tmp_path / "whole.onnx"))
    onnx.save(model, str(tmp_path / "split.onnx"), save_as_external_data=True, location="split.onnx.data",
              size_threshold=0)
    assert onnx_bytes(tmp_path / "split.onnx") == onnx.load(str(tmp_path / "split.onnx")).SerializeToString()
    whole = (tmp_path / "whole.onnx").read_bytes()
    (tmp_path / "cut.onnx").write_bytes(whole[: len(whole) * 3 // 4])
    with pytest.raises(AdvauditError, match=r"cut.onnx is truncated or corrupt: its \d+ bytes are not an ONNX model"):
        onnx_bytes(tmp_path / "cut.onnx")
    data = (tmp_path / "split.onnx.data").read_bytes()
    (tmp_path / "split.onnx.data").write_bytes(data[: len(data) // 2])
    with pytest.raises(AdvauditError, match=r"the external data of .*split.onnx \(split.onnx.data\) is truncated or corrupt"):
        onnx_bytes(tmp_path / "split.onnx")
    (tmp_path / "split.onnx.data").unlink()
    with pytest.raises(AdvauditError, match=r"split.onnx keeps its weights in external data file\(s\) "
                                            r"\['split.onnx.data'\], which are not next to it"):
        onnx_bytes(tmp_path / "split.onnx")


def test_a_table_models_file_gets_a_table_block_with_its_feature_count(tmp_path: Path) -> None:
    import joblib
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    table = TabularDataModule(name="wine")
    table.setup()
    forest = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0)
    forest.fit(table.split("train").x.numpy(), table.split("train").y.numpy())
    joblib.dump(forest, tmp_path / "forest.joblib")
    sio.dump(forest, tmp_path / "forest.skops")
    (tmp_path / "forest.pkl").write_bytes(pickle.dumps(forest))
    for name in ("forest.joblib", "forest.skops", "forest.pkl"):
        kind = identify(tmp_path / name)
        assert kind.features == 13, name
        advice = how_to_audit(tmp_path / name, kind)
        assert "input_shape: [13], normalization: model" in advice and "[C, H, W]" not in advice, advice
