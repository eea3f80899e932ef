"""Shared fixtures: compose the real Hydra configs with tiny sizes and outputs under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

import advaudit.registry  # noqa: F401  (registers the structured-config schemas before composing)

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = REPO / "conf"
FMNIST_ROOT = Path("/usr/share/datasets/fashion-mnist")

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("WANDB_SILENT", "true")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


def compose_config(config_name: str, overrides: list[str], tmp_path: Path) -> DictConfig:
    """Compose ``conf/<config_name>.yaml`` with ``overrides``; outputs and caches under ``tmp_path``."""
    GlobalHydra.instance().clear()
    paths = [f"paths.root_dir={tmp_path}", f"paths.output_dir={tmp_path / 'run'}",
             f"paths.cache_dir={tmp_path / 'cache'}"]
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name=config_name, overrides=[*paths, *overrides])
    finally:
        GlobalHydra.instance().clear()


@pytest.fixture
def make_cfg(tmp_path: Path) -> Callable[..., DictConfig]:
    """``make_cfg("train", ["model=mlp", ...])`` -> composed config writing under tmp_path."""

    def make(config_name: str, overrides: list[str] | None = None) -> DictConfig:
        return compose_config(config_name, list(overrides or []), tmp_path)

    return make


TINY_FMNIST = ["dataset=fashion_mnist", "dataset.limit={train:600,val:200,test:300}",
               "trainer.max_epochs=1", "logger=none", "callbacks=none",
               "+trainer.enable_progress_bar=false", "+trainer.enable_model_summary=false"]


@pytest.fixture(scope="session")
def tiny_fmnist_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CNN trained for one epoch on 600 real Fashion-MNIST images; path of its target.pt."""
    from advaudit.tasks import train

    tmp = tmp_path_factory.mktemp("fmnist_target")
    cfg = compose_config("train", ["model=cnn", *TINY_FMNIST], tmp)
    result = train(cfg)
    return Path(result["checkpoint"])


TINY_SHAPES = ["dataset=shapes", "dataset.image_size=16", "dataset.instances_per_class={train:6,val:2,test:2}",
               "dataset.m=3", "dataset.m_eval=1", "trainer.max_epochs=1", "logger=none", "callbacks=none",
               "+trainer.enable_progress_bar=false", "+trainer.enable_model_summary=false"]


@pytest.fixture(scope="session")
def tiny_shapes_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CNN trained for one epoch on 180 ShapeWorld renders at 16 px; path of its target.pt."""
    from advaudit.tasks import train

    tmp = tmp_path_factory.mktemp("shapes_target")
    return Path(train(compose_config("train", ["model=cnn", *TINY_SHAPES], tmp))["checkpoint"])


@pytest.fixture(scope="session")
def biased_svm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SVM black box on the real breast-cancer table whose training split lost its large benign
    tumours (``experiment=error_search/train_table``); path of its target.pt."""
    from advaudit.tasks import train

    tmp = tmp_path_factory.mktemp("svm")
    cfg = compose_config("train", ["experiment=error_search/train_table", "logger=none", "callbacks=none",
                                   "model.grid={kernel:[rbf],C:[1.0]}"], tmp)
    return Path(train(cfg)["checkpoint"])


def worst_case_overrides(target: Path, *extra: str) -> list[str]:
    """A seconds-long worst-case examination of ``target`` on 16-px ShapeWorld."""
    return [f"target={target}", "audit=worst_case", "world=shapes", "world.image_size=16",
            "world.instances_per_class={train:2,val:2,test:2}", "examiner=random", "examiner.q=4",
            "audit.budget=12", "audit.report_budgets=[0,4,12]", "audit.selection_renders=2",
            "audit.checkpoint_every=1", "logger=none", *extra]


@pytest.fixture(scope="session")
def oip_server(tmp_path_factory: pytest.TempPathFactory):
    """A real MLServer on a free port of 127.0.0.1, serving a small torch model and its ONNX export
    (:mod:`tests.models.endpoint_fixtures`); started once per session (about 10 s), stopped at its end."""
    from tests.models.endpoint_fixtures import start_test_server

    server = start_test_server(tmp_path_factory.mktemp("oip"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kserve_server(tmp_path_factory: pytest.TempPathFactory):
    """A real KServe ``ModelServer`` (it reads binary tensors) on a free port of 127.0.0.1, serving the same model
    as ``oip_server`` as TorchScript and ONNX; about 12 s to start. Skipped where KServe's environment is missing
    (``make kserve`` makes it)."""
    from advaudit.models.targets.endpoint.serve import kserve_python
    from tests.models.endpoint_fixtures import start_kserve_server

    if kserve_python() is None:
        pytest.skip("KServe is not installed (make kserve makes .venv-kserve)")
    server = start_kserve_server(tmp_path_factory.mktemp("kserve"))
    yield server
    server.stop()
