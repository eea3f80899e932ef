"""Models trained elsewhere through the real entry points: evaluate, a worst-case examination and the
error search, a sweep with an advaudit-trained checkpoint and its comparison, and ``advaudit import``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from advaudit.compare import compare_runs
from advaudit.confutil import override_value
from advaudit.models.targets.imported.store import import_target
from advaudit.tasks import examine
from tests.conftest import compose_config
from tests.models.test_imported_targets import FMNIST_NAMES, resnet_block

REPO = Path(__file__).resolve().parents[1]
SMALL_FMNIST = {"_target_": "advaudit.data.fashion_mnist.FashionMNISTDataModule",
                "limit": {"train": 100, "val": 60, "test": 200}, "val_fraction": 0.1}
TRANSFORMS_EXAMINATION = ["audit=worst_case", "world=transforms", "examiner=random", "examiner.q=4",
                          "audit.selection=random", "audit.n_instances=6", "audit.budget=12",
                          "audit.report_budgets=[0,4,12]", "audit.checkpoint_every=1",
                          # no judge in the check: with the packaged Fashion-MNIST judge few of 12 queries are valid
                          "audit.validity.reference=null"]


def run_examine(tmp_path: Path, name: str, target: Any, *overrides: str) -> dict[str, Any]:
    value = target if isinstance(target, (str, Path)) else override_value(target)
    cfg = compose_config("examine", [f"target={value}", "logger=none", *overrides], tmp_path / name)
    return examine(cfg)


@pytest.fixture(scope="module")
def imported_resnet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A torchvision ResNet-18 (random weights) imported once with `advaudit import` (subprocess, real CLI)."""
    import torchvision

    root = tmp_path_factory.mktemp("imported")
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18(num_classes=10).state_dict(), root / "resnet18.pt")
    spec = root / "resnet18.yaml"
    block = resnet_block(root / "resnet18.pt", dataset=SMALL_FMNIST)
    spec.write_text(json.dumps({"target": block}))      # JSON is YAML
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    done = subprocess.run([sys.executable, "-m", "advaudit", "import", str(spec), "--out", str(root / "team.pt")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "scores equal to the source model" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "advaudit", "import", str(spec), "--out", str(root / "x.pt"),
                          "class_name=[a]"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: target.class_name is not a target setting; did you mean target.class_names?"]
    return root / "team.pt"


@pytest.mark.slow  # about a minute on 2 cores: make test stays under 15 minutes; run with -m slow
def test_imported_resnet_is_evaluated_examined_and_compared_with_an_advaudit_checkpoint(
        imported_resnet: Path, tiny_fmnist_target: Path, tmp_path: Path) -> None:
    evaluated = run_examine(tmp_path, "evaluate", imported_resnet, "audit=evaluate")
    assert evaluated["n_items"] == 200 and len(evaluated["per_class_acc"]) == 10
    assert evaluated["target"] == str(imported_resnet) and evaluated["target_loading"].startswith("data only")
    examined = run_examine(tmp_path, "worst", imported_resnet, *TRANSFORMS_EXAMINATION)
    assert 0.0 <= examined["examine/E_T"] <= 1.0 and examined["queries_per_instance"] == 12
    # one multirun over the imported file and an advaudit-trained checkpoint, then the paired comparison
    sweep = tmp_path / "sweep"
    data = "+audit.dataset=" + override_value({**SMALL_FMNIST, "limit": {"train": 100, "val": 60, "test": 300}})
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}
    done = subprocess.run([sys.executable, "examine.py", "-m", "audit=evaluate", f"target={imported_resnet},{tiny_fmnist_target}",
                           data, f"hydra.sweep.dir={sweep}", f"paths.root_dir={tmp_path}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = compare_runs([sweep], tmp_path / "comparison", replay=False)
    group = summary["groups"][0]
    assert {row["target"] for row in group["checkpoints"]} == {str(imported_resnet), str(tiny_fmnist_target)}
    accuracy = next(row for row in group["pairs"] if row["metric"] == "evaluate/acc")
    assert accuracy["test"].startswith("McNemar") and 0.0 <= accuracy["p"] <= 1.0   # paired on the same 300 images


def test_users_lightning_module_through_every_audit(tmp_path: Path) -> None:
    import pytorch_lightning as pl

    from tests.models.user_models import LitNet

    dm = compose_datamodule()
    torch.manual_seed(4)
    lit = LitNet(lr=0.1)
    data = torch.utils.data.TensorDataset(dm.split("train").x, dm.split("train").y)
    trainer = pl.Trainer(max_epochs=10, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu", default_root_dir=tmp_path)
    trainer.fit(lit, torch.utils.data.DataLoader(data, batch_size=32, shuffle=True))
    trainer.save_checkpoint(tmp_path / "lit.ckpt")
    block = {"lightning_module": "tests.models.user_models.LitNet", "path": str(tmp_path / "lit.ckpt"),
             "class_names": FMNIST_NAMES, "input_shape": [1, 28, 28], "normalization": "model",
             "temperature": "calibrate", "dataset": {**SMALL_FMNIST, "limit": {"train": 400, "val": 100, "test": 300}}}
    evaluated = run_examine(tmp_path, "evaluate", block, "audit=evaluate")
    assert "lightning_module: tests.models.user_models.LitNet" in evaluated["target_loading"]
    assert evaluated["evaluate/acc"] > 0.3                 # a real, if small, classifier: above chance (0.1)
    examined = run_examine(tmp_path, "worst", block, *TRANSFORMS_EXAMINATION)
    assert examined["examine/worst"] <= examined["examine/E_T@0"] + 1e-9
    probs = examine_probs(block, dm)
    critical = int(probs.argmax(1).bincount(minlength=10).argmax())
    searched = run_examine(tmp_path, "search", block, "audit=error_search", f"audit.critical_class={critical}",
                           "audit.tau=0.3", "audit.pool_size=20", "audit.replications=5", "audit.budget=5",
                           "audit.report_at=[5]", "audit.compare=[random,low_confidence]",
                           "search.adversarial_distance.attack.steps=2")
    assert searched["search/eligible"] >= 20 and "search/adversarial_distance/sdr@5" in searched
    ceiling = searched["search/oracle_ceiling/sdr@5"]
    assert all(searched[f"search/{m}/sdr@5"] <= ceiling + 1e-9 for m in ("adversarial_distance", "random"))


def test_random_forest_and_a_prediction_function_as_black_boxes(tmp_path: Path) -> None:
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    from advaudit.data.sklearn_sets import TabularDataModule

    table = TabularDataModule(name="breast_cancer")
    table.setup()
    train = table.split("train")
    forest = RandomForestClassifier(n_estimators=30, max_depth=4, random_state=0).fit(train.x.numpy(), train.y.numpy())
    sio.dump(forest, tmp_path / "forest.skops")
    block = {"path": str(tmp_path / "forest.skops"), "class_names": table.class_names, "input_shape": [30],
             "normalization": "model", "dataset": {"_target_": "advaudit.data.sklearn_sets.TabularDataModule",
                                                   "name": "breast_cancer"}}
    evaluated = run_examine(tmp_path, "forest_evaluate", block, "audit=evaluate")
    test = table.split("test")
    assert abs(evaluated["evaluate/acc"] - forest.score(test.x.numpy(), test.y.numpy())) < 1e-6
    searched = run_examine(tmp_path, "forest_search", block, "experiment=error_search/table", "audit.pool_size=40",
                           "audit.replications=10", "audit.budget=10", "audit.report_at=[5,10]",
                           "audit.compare=[random,low_confidence]", "search.gad.pseudo_model.design_size=3000",
                           "search.gad.pseudo_model.epochs=10", "search.gad.attack.max_steps=200", "audit.tau=0.5")
    assert "search/gad/sdr@10" in searched and -1 <= searched["search/gad/pseudo_r2"] <= 1
    function = {"function": "tests.models.user_models.brightness_votes", "class_names": FMNIST_NAMES,
                "input_shape": [1, 28, 28], "normalization": "model", "array": "numpy", "dataset": SMALL_FMNIST}
    evaluated = run_examine(tmp_path, "function_evaluate", function, "audit=evaluate")
    assert evaluated["target"] == "function:tests.models.user_models.brightness_votes"
    examined = run_examine(tmp_path, "function_worst", function, *TRANSFORMS_EXAMINATION[:2], "examiner=bo",
                           *TRANSFORMS_EXAMINATION[3:], "examiner.q=1", "audit.budget=6", "audit.report_budgets=[0,6]",
                           "examiner.n_init=3")
    assert np.isfinite(examined["examine/E_T"]) and examined["queries_per_instance"] == 6


def test_model_files_given_as_a_path_get_the_block_that_audits_them(tmp_path: Path) -> None:
    from tests.cli_batch import run_case

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)).eval()
    torch.jit.trace(net, torch.rand(2, 1, 28, 28)).save(str(tmp_path / "net.ts"))
    torch.save(net, tmp_path / "whole.pt")
    cases = {"net.ts": "TorchScript archive", "whole.pt": "whole pickled module"}
    for name, kind in cases.items():
        done = run_case("examine.py", ["audit=evaluate", f"target={tmp_path / name}", "logger=none",
                                       f"hydra.run.dir={tmp_path / 'runs' / name}"])
        assert done["code"] == 2, done["stderr"][-2000:]
        line = done["stderr"].strip().splitlines()[-1]
        assert kind in line and "target={path:" in line and "\x1b" not in done["stderr"]
        record = json.loads((tmp_path / "runs" / name / "result.json").read_text())
        assert record["status"] == "failed" and "\x1b" not in json.dumps(record)


def compose_datamodule() -> Any:
    from hydra.utils import instantiate

    dm = instantiate({**SMALL_FMNIST, "limit": {"train": 400, "val": 100, "test": 300}})
    dm.setup()
    return dm


def examine_probs(block: dict[str, Any], dm: Any) -> torch.Tensor:
    from advaudit.models import load_target

    return load_target(block).predict_proba(dm.split("test").x)


def test_import_refuses_what_it_cannot_store(tmp_path: Path) -> None:
    from advaudit.errors import AdvauditError

    with pytest.raises(AdvauditError, match="cannot be stored in a file"):
        import_target({"function": "tests.models.user_models.brightness_votes", "class_names": FMNIST_NAMES,
                       "input_shape": [1, 28, 28], "normalization": "model"}, tmp_path / "f.pt")


def test_a_block_in_the_users_config_folder_and_its_wandb_lineage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's recipe: the block in an experiment file of the user's own --config-dir; W&B records the
    model file as the run's input artifact with the block and its SHA-256."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from advaudit.data.sklearn_sets import TabularDataModule
    from advaudit.models.targets.imported.spec import file_sha256
    from advaudit.report.wandb_offline import offline_runs
    from tests.cli_batch import run_case

    table = TabularDataModule(name="wine")
    table.setup()
    model = LogisticRegression(max_iter=2000).fit(table.split("train").x.numpy(), table.split("train").y.numpy())
    sio.dump(model, tmp_path / "wine.skops")
    experiment = tmp_path / "my_conf" / "experiment"
    experiment.mkdir(parents=True)
    (experiment / "wine_logreg.yaml").write_text(
        "# @package _global_\ntarget:\n"
        f"  path: {tmp_path / 'wine.skops'}\n  class_names: [class_0, class_1, class_2]\n  input_shape: [13]\n"
        "  normalization: model\n  dataset: tabular\n  name: wine-logreg\n")
    monkeypatch.setenv("WANDB_MODE", "offline")
    done = run_case("examine.py", ["--config-dir", str(tmp_path / "my_conf"), "experiment=wine_logreg", "audit=evaluate",
                                   "+audit.dataset={_target_:advaudit.data.sklearn_sets.TabularDataModule,name:wine}",
                                   f"hydra.run.dir={tmp_path / 'run'}"])
    assert done["code"] == 0, done["stderr"][-2000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["target"] == "wine-logreg" and result["n_items"] == len(table.split("test"))
    [run] = offline_runs(tmp_path / "run")
    [artifact] = [a for a in run["artifacts"] if a["type"] == "model"]
    assert artifact["input"] is True and artifact["files"] == ["wine.skops"]
    assert artifact["metadata"]["sha256"] == file_sha256(tmp_path / "wine.skops")
    assert artifact["metadata"]["target_block"]["name"] == "wine-logreg"


def test_a_dataset_a_target_file_names_is_built_only_from_advaudits_own_code(tiny_fmnist_target: Path,
                                                                              tmp_path: Path) -> None:
    """A target file cannot make an audit import code: a stored dataset ``_target_`` outside advaudit.data is
    refused (the user names such a dataset in their config instead)."""
    from advaudit.audits.common import target_datamodule
    from advaudit.errors import AdvauditError
    from advaudit.models import load_target

    payload = torch.load(tiny_fmnist_target, weights_only=True)
    payload["meta"]["config"]["dataset"]["_target_"] = "os.system"
    crafted = tmp_path / "crafted.pt"
    torch.save(payload, crafted)
    target = load_target(crafted)
    with pytest.raises(AdvauditError, match="a file never makes advaudit import code"):
        target_datamodule(target)
    assert len(target_datamodule(load_target(tiny_fmnist_target)).split("test")) == 300
