"""``audit.dataset``: the data an audit reads instead of the target's own, for every audit that reads
data, given as a dataset block or as a ``conf/dataset`` option (``+dataset@audit.dataset=<name>``)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate

from advaudit.audits.common import target_datamodule
from advaudit.config import validate
from advaudit.core.records import read_jsonl
from advaudit.data.fashion_mnist import CLASS_NAMES
from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.tasks import examine
from tests.conftest import worst_case_overrides

FMNIST = "advaudit.data.fashion_mnist.FashionMNISTDataModule"
LIMIT = "{train:100,val:50,test:400}"  # the target's own test split (conftest.TINY_FMNIST) has 300 items
FORMS = {"block": [f"audit.dataset={{_target_:{FMNIST},limit:{LIMIT}}}"],
         "named": ["+dataset@audit.dataset=fashion_mnist", f"audit.dataset.limit={LIMIT}"]}


@pytest.mark.parametrize("form", FORMS)
def test_evaluate_reads_the_override(make_cfg, tiny_fmnist_target: Path, form: str) -> None:
    result = examine(make_cfg("examine", ["audit=evaluate", f"target={tiny_fmnist_target}", "logger=none",
                                          *FORMS[form]]))
    assert result["n_items"] == 400 and len(result["per_class_acc"]) == 10


@pytest.mark.parametrize("form", FORMS)
def test_error_search_reads_the_override(make_cfg, tiny_fmnist_target: Path, form: str) -> None:
    """The pools are drawn from the override's test split: its eligible items, counted independently."""
    target = load_target(tiny_fmnist_target)
    data = instantiate({"_target_": FMNIST, "limit": {"train": 100, "val": 50, "test": 400}})
    data.setup()
    predicted = target.predict_proba(data.split("test").x).argmax(1)
    critical = int(predicted.bincount().argmax())  # the tiny target's most predicted class
    cfg = make_cfg("examine", ["audit=error_search", f"target={tiny_fmnist_target}", "logger=none",
                               "search=low_confidence", "audit.compare=[random]", "audit.tau=0.0",
                               f"audit.critical_class={critical}", "audit.pool_size=20", "audit.clamp_pool_size=true",
                               "audit.replications=4", "audit.budget=5", "audit.report_at=[5]", *FORMS[form]])
    result = examine(cfg)
    assert result["search/eligible"] == int((predicted == critical).sum())
    assert 0 <= result["search/random/sdr@5"] and (Path(cfg.paths.output_dir) / "report.md").is_file()


def test_the_override_must_hold_the_targets_classes_in_its_order(tiny_fmnist_target: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Labels index the target's outputs: another number of classes, or the same in another order, is
    refused; as many classes under other names are compared by index, with a warning naming them."""
    from omegaconf import OmegaConf

    target = load_target(tiny_fmnist_target)
    digits = OmegaConf.create({"_target_": "advaudit.data.sklearn_sets.DigitsDataModule"})
    with pytest.raises(AdvauditError, match=r"audit.dataset has 2 classes \['0', '1'\] but the target predicts 10 "
                                            r"\['t-shirt', .*give a dataset with the target's classes"):
        target_datamodule(target, OmegaConf.create({**digits, "classes": [0, 1]}))
    reordered = OmegaConf.create({"_target_": FMNIST, "classes": list(reversed(CLASS_NAMES)), "limit": {"test": 10}})
    with pytest.raises(AdvauditError, match=rf"keep the target's classes in its order with audit.dataset.classes="
                                            rf"\[{', '.join(CLASS_NAMES)}\]"):
        target_datamodule(target, reordered)
    same = target_datamodule(target, OmegaConf.create({"_target_": FMNIST, "limit": {"train": 50, "test": 10}}))
    assert len(same.split("test")) == 10 and same.class_names == target.class_names
    with caplog.at_level(logging.WARNING, logger="advaudit"):
        renamed = target_datamodule(target, OmegaConf.create({**digits, "limit": {"train": 50, "test": 10}}))
    assert len(renamed.class_names) == 10 and caplog.messages == [
        "warning: audit.dataset names its classes differently from the target; compared by index: 0 as t-shirt, "
        "1 as trouser, 2 as pullover, 3 as dress, 4 as coat, 5 as sandal, 6 as shirt, 7 as sneaker, 8 as bag, "
        "9 as ankle-boot"]
    with pytest.raises(AdvauditError, match="builds a Linear, not a dataset"):
        target_datamodule(target, OmegaConf.create({"_target_": "torch.nn.Linear", "in_features": 2,
                                                    "out_features": 2}))


@pytest.mark.parametrize("value,message", [
    ("fashion_mnist", "audit.dataset=fashion_mnist names no dataset config; to audit on conf/dataset/"
                      "fashion_mnist.yaml write +dataset@audit.dataset=fashion_mnist"),
    ("{limit:{test:3}}", "audit.dataset={'limit': {'test': 3}} is not a dataset config; give a block with _target_"),
])
def test_a_name_or_a_block_without_target_is_refused_before_any_work(make_cfg, tiny_fmnist_target: Path, value: str,
                                                                      message: str) -> None:
    for audit in ("evaluate", "error_search"):
        cfg = make_cfg("examine", [f"audit={audit}", f"target={tiny_fmnist_target}", f"audit.dataset={value}"])
        with pytest.raises(AdvauditError) as refused:
            validate(cfg, "examine")
        assert message in str(refused.value)
    with pytest.raises(AdvauditError, match="write \\+dataset@audit.dataset=digits"):
        target_datamodule(load_target(tiny_fmnist_target), "digits")  # library use: the same line


@pytest.mark.parametrize("audit", ["worst_case", "gallery", "fault_tests"])
def test_audits_that_read_no_dataset_refuse_one(make_cfg, tiny_fmnist_target: Path, audit: str) -> None:
    """The world (or the generator) gives these audits their inputs: audit.dataset would be ignored."""
    cfg = make_cfg("examine", [f"audit={audit}", f"target={tiny_fmnist_target}", f"generator={tiny_fmnist_target}",
                               f"+audit.dataset={{_target_:{FMNIST}}}"])
    with pytest.raises(AdvauditError, match=r"audit has unknown keys \['dataset'\].*only audit=evaluate and "
                                            r"audit=error_search read a dataset; .*world=transforms"):
        validate(cfg, "examine")


def test_worst_case_reads_a_dataset_through_its_world(make_cfg, tiny_fmnist_target: Path) -> None:
    """world=transforms: the examination runs on its dataset block's images (here capped by limit)."""
    overrides = [o for o in worst_case_overrides(tiny_fmnist_target) if not o.startswith("world")]
    cfg = make_cfg("examine", [*overrides, "world=transforms", "audit.selection=random", "audit.n_instances=4",
                               f"+world.dataset.limit={LIMIT}"])
    result = examine(cfg)
    steps = read_jsonl(Path(cfg.paths.output_dir) / "steps.jsonl")
    assert len({row["instance"] for row in steps}) == 4 and torch.isfinite(torch.tensor(result["examine/E_T"]))
