"""The recipes of docs/imported-models.md run as printed: the target block, the commands and the Python
snippets are read from the page (never copied here), with the model files they expect made by the test.

Only the interpreter is substituted (``.venv/bin/python`` -> this one, ``advaudit`` -> ``python -m
advaudit``), and a multirun's placeholder checkpoint (``outputs/train/runs/<time>/...``) is dropped.
The commands run in a fresh folder, as a user's project would, with the repository on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # full Fashion-MNIST evaluations of a ResNet-18: minutes on one thread

PAGE = REPO / "docs" / "imported-models.md"
ENV = {**os.environ, "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
       "ADVAUDIT_PROGRESS": "0", "HYDRA_FULL_ERROR": ""}


def fences(language: str) -> list[str]:
    """The page's code blocks in ``language``, in order."""
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.S)


def command(containing: str) -> list[str]:
    """The one bash line of the page that contains ``containing``, comment dropped, as argv."""
    lines = [line for block in fences("bash") for line in block.splitlines() if containing in line]
    assert len(lines) == 1, (containing, lines)
    argv = shlex.split(lines[0], comments=True)
    if argv[0] == "advaudit":
        return [sys.executable, "-m", "advaudit", *argv[1:]]
    assert argv[:2] == [".venv/bin/python", "examine.py"], argv
    return [sys.executable, str(REPO / "examine.py"), *argv[2:]]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(REPO), str(cwd)])}
    env.pop("ADVAUDIT_ROOT", None)
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"{argv}\n{done.stderr[-3000:]}"
    return done


def multirun_of_the_imported_file() -> list[str]:
    """The page's ``-m`` line over the imported file, its placeholder checkpoint dropped."""
    argv = command("target=team/resnet18_fmnist.pt,")
    return [arg.split(",")[0] if arg.startswith("target=team/") else arg for arg in argv]


def newest_result(root: Path) -> dict:
    results = sorted(root.glob("outputs/examine/**/result.json"), key=lambda p: p.stat().st_mtime)
    assert results, f"no result.json under {root}/outputs"
    return json.loads(results[-1].read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's folder: the page's experiment file in my_conf/experiment/, the weights where it expects them."""
    import torchvision
    import yaml

    root = tmp_path_factory.mktemp("project")
    [experiment] = [block for block in fences("yaml") if block.startswith("# @package _global_")]
    (root / "my_conf" / "experiment").mkdir(parents=True)
    (root / "my_conf" / "experiment" / "resnet_fmnist.yaml").write_text(experiment)
    block = yaml.safe_load(experiment)["target"]
    assert block["model"]["_target_"] == "torchvision.models.resnet18" and block["dataset"] == "fashion_mnist"
    torch.manual_seed(0)
    weights = root / block["path"]
    weights.parent.mkdir(parents=True)
    torch.save(torchvision.models.resnet18(**{k: v for k, v in block["model"].items() if k != "_target_"}).state_dict(),
               weights)
    return root


def test_the_pages_target_block_is_evaluated_as_printed(project: Path) -> None:
    run(command("experiment=resnet_fmnist audit=evaluate"), project)
    result = newest_result(project)
    assert result["status"] == "ok" and result["n_items"] == 10_000 and len(result["per_class_acc"]) == 10
    assert "torchvision.models.resnet18" in result["target_loading"]


def test_the_pages_import_then_audit_of_the_file(project: Path) -> None:
    done = run(command("--out team/resnet18_fmnist.pt "), project)
    assert "scores equal to the source model" in done.stdout
    stored = torch.load(project / "team" / "resnet18_fmnist.pt", weights_only=True)
    dataset = stored["meta"]["config"]["dataset"]
    assert dataset["_target_"] == "advaudit.data.fashion_mnist.FashionMNISTDataModule"   # composed, not {'seed': 0}
    run(multirun_of_the_imported_file(), project)      # a multirun from the user's folder, no environment set
    result = newest_result(project)
    assert result["status"] == "ok" and result["n_items"] == 10_000
    assert result["target_loading"].startswith("data only")


def test_the_pages_onnx_table_line(project: Path) -> None:
    from advaudit.data.sklearn_sets import TabularDataModule

    argv = command("target={path:model.onnx")
    block = next(arg for arg in argv if arg.startswith("target="))
    features = int(re.search(r"input_shape:\[(\d+)\]", block).group(1))
    torch.manual_seed(0)
    torch.onnx.export(torch.nn.Sequential(torch.nn.BatchNorm1d(features), torch.nn.Linear(features, 2)).eval(),
                      (torch.rand(4, features),), str(project / "model.onnx"), dynamo=False,
                      input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    run(argv, project)
    result = newest_result(project)
    table = TabularDataModule(name="breast_cancer")
    table.setup()
    assert result["status"] == "ok" and result["n_items"] == len(table.split("test"))
    assert sorted(result["per_class_acc"]) == sorted(table.class_names)


def test_the_pages_python_snippets(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The modified architecture (a function returning the module) and scoring from Python."""
    import yaml

    from advaudit.data.fashion_mnist import FashionMNISTDataModule

    [builder] = [block for block in fences("python") if block.startswith("# my_models.py")]
    (project / "my_models.py").write_text(builder)
    [patch] = [block for block in fences("yaml") if "my_models." in block]
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.chdir(project)
    import my_models  # type: ignore[import-not-found]

    torch.manual_seed(0)
    grey = yaml.safe_load(patch)
    net = my_models.resnet18_grey(**{k: v for k, v in grey["model"].items() if k != "_target_"}).eval()
    torch.save(net.state_dict(), project / "grey.pt")
    data = FashionMNISTDataModule(limit={"train": 10, "val": 10, "test": 16}, val_fraction=0.1)
    data.setup()
    images = data.split("test").x
    [snippet] = [block for block in fences("python") if "advaudit.load_target" in block]
    names = {"images": images}
    exec(snippet, names)  # noqa: S102 - the page's own example, run as printed
    assert names["probs"].shape == (16, 10) and torch.allclose(names["probs"].sum(1), torch.ones(16))
    import advaudit

    block = {**yaml.safe_load((project / "my_conf" / "experiment" / "resnet_fmnist.yaml").read_text())["target"],
             **grey, "path": "grey.pt", "temperature": 1.0}
    block.pop("resize_from")
    block["normalization"] = "model"
    target = advaudit.load_target(block)
    with torch.no_grad():
        assert torch.allclose(target.predict_proba(images), torch.softmax(net(images), 1), atol=1e-5)
