"""``audit.dataset``: the data an audit reads instead of the target's own, for every audit that reads
data, given as a dataset block or as a ``conf/dataset`` option (``+dataset@audit.dataset=<name>``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate

from advaudit.audits.common import target_datamodule
from advaudit.validation import validate
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


def test_the_override_is_paired_with_the_targets_classes_by_name(tiny_fmnist_target: Path) -> None:
    """Labels index the data's classes: the target's outputs are reordered to them by name; a class the data
    does not have is refused, and digits named 0..9 are paired with the target's classes only when asked."""
    from omegaconf import OmegaConf

    digits = OmegaConf.create({"_target_": "advaudit.data.sklearn_sets.DigitsDataModule"})
    with pytest.raises(AdvauditError, match=r"the target's class 't-shirt' is not a class of audit.dataset \(its "
                                            r"classes: \['0', '1'\]\)"):
        target_datamodule(load_target(tiny_fmnist_target), OmegaConf.create({**digits, "classes": [0, 1]}))
    ordered = load_target(tiny_fmnist_target)
    same = target_datamodule(ordered, OmegaConf.create({"_target_": FMNIST, "limit": {"train": 50, "test": 10}}))
    assert len(same.split("test")) == 10 and same.class_names == ordered.class_names == CLASS_NAMES
    reversed_target = load_target(tiny_fmnist_target)
    reordered = OmegaConf.create({"_target_": FMNIST, "classes": list(reversed(CLASS_NAMES)), "limit": {"test": 10}})
    data = target_datamodule(reversed_target, reordered)
    x = data.split("test").x
    assert reversed_target.class_names == data.class_names == list(reversed(CLASS_NAMES))
    assert torch.allclose(reversed_target.predict_proba(x), ordered.predict_proba(x).flip(1), atol=1e-6)
    by_position = load_target(tiny_fmnist_target)
    by_position.meta["match_classes"] = "position"      # what target={path: ..., match_classes: position} sets
    renamed = target_datamodule(by_position, OmegaConf.create({**digits, "limit": {"train": 50, "test": 10}}))
    assert renamed.class_names == [str(d) for d in range(10)] == by_position.class_names
    assert by_position.meta["class_alignment"]["description"].startswith(
        "classes paired by position, as the target block asks (match_classes: position): t-shirt as 0, trouser as 1")
    with pytest.raises(AdvauditError, match="builds a Linear, not a dataset"):
        target_datamodule(ordered, OmegaConf.create({"_target_": "torch.nn.Linear", "in_features": 2,
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
