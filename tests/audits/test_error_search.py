"""The error-search audit end to end on real data: a biased SVM black box on a real table and a
CNN on Fashion-MNIST, every method, report files, resume, and bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from advaudit.core.records import read_json, read_jsonl
from advaudit.errors import AdvauditError
from advaudit.models.targets.target import SklearnTarget
from tests.conftest import compose_config

ALL = "[random,low_confidence,lakkaraju,bansal_weld,facility_locations,adversarial_distance]"


def search_overrides(target: Path, *extra: str) -> list[str]:
    return [f"target={target}", "experiment=error_search/table", "logger=none", "audit.pool_size=60",
            "audit.replications=30", "audit.budget=15", "audit.report_at=[5,15]",
            "search.gad.pseudo_model.design_size=5000", "search.gad.pseudo_model.epochs=10",
            "search.gad.attack.max_steps=200", *extra]


def test_gad_search_on_a_biased_black_box_runs_every_method_and_resumes(biased_svm: Path, tmp_path: Path) -> None:
    from advaudit.tasks import examine

    cfg = compose_config("examine", search_overrides(biased_svm), tmp_path)
    result = examine(cfg)
    out = Path(cfg.paths.output_dir)
    curves = {r["method"]: r for r in read_jsonl(out / "methods.jsonl")}
    for name in ("gad", "random", "low_confidence", "lakkaraju", "bansal_weld", "facility_locations",
                 "adversarial_distance"):
        for measure in ("sdr", "errors", "spread", "coverage", "confidence"):  # the reported points of the curves
            assert result[f"search/{name}/{measure}@15"] == curves[name][f"{measure}_mean"][14], (name, measure)
        errors, spread, coverage = (curves[name][f"{m}_mean"] for m in ("errors", "spread", "coverage"))
        # errors found: a running count, at most one per query, at most the errors a pool holds
        assert all(0 <= b - a <= 1 for a, b in zip([0.0, *errors], errors)), name
        assert 0 < errors[14] <= result["search/pool_errors_mean"], name
        # SDR = errors / sum(1 - c) over queries that all have c > tau = 0.65: above errors / (15 * 0.35)
        assert min(curves[name]["queried_confidence"]) > 0.65, name
        assert result[f"search/{name}/sdr@15"] > errors[14] / (15 * 0.35), name
        # spread (mean distance to the nearest query) falls as queries come; coverage grows with each error
        assert all(b <= a for a, b in zip(spread, spread[1:])) and 0 < spread[14] < spread[0], name
        assert all(b >= a for a, b in zip(coverage, coverage[1:])) and coverage[14] > 0, name
    ceiling = result["search/oracle_ceiling/sdr@15"]
    assert all(result[f"search/{n}/sdr@15"] <= ceiling + 1e-9 for n in ("gad", "random", "lakkaraju"))
    assert result["search/sdr@15"] == result["search/gad/sdr@15"]
    assert result["search/eligible_errors"] > 0 and -1 <= result["search/gad/pseudo_r2"] <= 1
    for png in ("sdr.png", "errors.png", "spread.png", "coverage.png", "queried_confidence.png", "lowess_gad.png",
                "reliability_critical_class.png"):
        assert (out / png).is_file(), png
    assert "| gad |" in (out / "report.md").read_text()
    assert read_json(out / "result.json")["search/budget"] == 15
    # an interrupted run resumes: scores and finished methods are read back, not recomputed
    lines = len(read_jsonl(out / "scores" / "gad.jsonl"))
    assert examine(cfg)["search/gad/resumed_items"] == result["search/eligible"]
    assert len(read_jsonl(out / "scores" / "gad.jsonl")) == lines


def test_adversarial_distance_on_fashion_mnist_with_a_foolbox_attack(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    from advaudit.audits.common import target_datamodule
    from advaudit.models import load_target
    from advaudit.tasks import examine

    target = load_target(tiny_fmnist_target)
    predicted = target.predict_proba(target_datamodule(target).splits["test"].x).argmax(1)
    critical = int(predicted.bincount().argmax())  # the class this one-epoch model predicts most
    cfg = compose_config("examine", [f"target={tiny_fmnist_target}", "audit=error_search", "logger=none",
                                     f"audit.critical_class={critical}", "audit.tau=0.3", "audit.pool_size=20",
                                     "audit.replications=5", "audit.budget=5", "audit.report_at=[5]",
                                     "audit.compare=[random,lakkaraju]", "search.adversarial_distance.attack.steps=2",
                                     "search.adversarial_distance.attack.method=hop_skip_jump",
                                     "+search.adversarial_distance.attack.params={max_gradient_eval_steps:20}"],
                         tmp_path)
    result = examine(cfg)
    out = Path(cfg.paths.output_dir)
    # one attack record per eligible item; its failures are the ones counted; every found adversarial lies a
    # positive distance away inside the [0, 1] pixel box (MAE in pixel units)
    records = read_jsonl(out / "scores" / "adversarial_distance.jsonl")
    assert len({r["item"] for r in records}) == len(records) == result["search/eligible"] >= 20
    assert result["search/adversarial_distance/attack_failures"] == sum(not r["ok"] for r in records) < len(records)
    assert all(0 < r["mae"] <= 1 if r["ok"] else r["mae"] is None for r in records)
    curves = {r["method"]: r for r in read_jsonl(out / "methods.jsonl")}
    for name in ("adversarial_distance", "random", "lakkaraju"):
        assert result[f"search/{name}/sdr@5"] == curves[name]["sdr_mean"][4] > 0, name
    assert result["search/sdr@5"] == result["search/adversarial_distance/sdr@5"]
    assert (out / "lowess_adversarial_distance.png").is_file()


def test_bad_input_is_named(biased_svm: Path, tmp_path: Path) -> None:
    from sklearn.svm import SVC

    from advaudit.tasks import examine

    with pytest.raises(AdvauditError, match=r"confidence > 1.0.*lower audit.tau"):
        examine(compose_config("examine", search_overrides(biased_svm, "audit.tau=1.0"),
                               tmp_path / "tau"))  # one run dir each: a changed config is refused
    with pytest.raises(AdvauditError, match="number of queries must be >= 1"):
        examine(compose_config("examine", search_overrides(biased_svm, "audit.budget=0"),
                               tmp_path / "budget"))  # one run dir each: a changed config is refused
    with pytest.raises(AdvauditError, match="does not exist; use a name or index"):
        examine(compose_config("examine", search_overrides(biased_svm, "audit.critical_class=cat"),
                               tmp_path / "cls"))  # one run dir each: a changed config is refused
    with pytest.raises(AdvauditError, match="exceeds the .* items available"):
        examine(compose_config("examine", search_overrides(biased_svm, "audit.pool_size=100000"),
                               tmp_path / "pool"))  # one run dir each: a changed config is refused
    meta = {"class_names": ["a", "b"], "input_shape": [2], "normalization": {"mean": [0, 0], "std": [1, 1]}}
    with pytest.raises(AdvauditError, match="no predict_proba"):
        SklearnTarget(SVC().fit(torch.rand(10, 2).numpy(), [0, 1] * 5), meta)


def test_settings_outside_their_rules_are_refused_by_validation_and_by_the_typed_audit(biased_svm: Path,
                                                                                       tmp_path: Path) -> None:
    """A single setting's rule lives on its schema field: validation prints the rule's own line (and not the
    budget-within-pool tie on top), and building the typed audit refuses the same value."""
    from advaudit.config import typed
    from advaudit.validation import validate
    from advaudit.audits.settings import ErrorSearchAuditConf

    cfg = compose_config("examine", search_overrides(biased_svm, "audit.budget=0", "audit.pool_size=0",
                                                     "audit.features.components=0"), tmp_path / "bad")
    with pytest.raises(AdvauditError) as refused:
        validate(cfg, "examine")
    assert str(refused.value) == (
        "3 problems in the config: audit.pool_size=0: a pool needs at least one item; the nearest valid value is 1; "
        "audit.budget=0; the number of queries must be >= 1 (the nearest valid value is 1); "
        "audit.features.components=0 must be >= 1; the nearest valid value is 1")
    with pytest.raises(AdvauditError, match=r"^audit\.budget=0; the number of queries must be >= 1 "):
        typed(ErrorSearchAuditConf, {"budget": 0})
    with pytest.raises(AdvauditError, match=r"^audit\.features\.components=0 must be >= 1"):
        typed(ErrorSearchAuditConf, {"features": {"components": 0}})
    audit = typed(ErrorSearchAuditConf, compose_config("examine", search_overrides(biased_svm), tmp_path / "ok").audit)
    assert (audit.budget, audit.pool_size, audit.replications, audit.report_at) == (15, 60, 30, [5, 15])


def test_clamped_pools_hold_every_eligible_item(biased_svm: Path, tmp_path: Path) -> None:
    """``audit.clamp_pool_size=true`` turns a pool larger than the data into the largest the data allow:
    every pool is then the whole eligible set, so a static ranking queries the same items in each pool."""
    from advaudit.tasks import examine

    cfg = compose_config("examine", search_overrides(biased_svm, "audit.pool_size=100000", "audit.clamp_pool_size=true",
                                                     "search=low_confidence", "audit.compare=[random]",
                                                     "audit.replications=4"), tmp_path)
    result = examine(cfg)
    assert result["search/pool_size"] == result["search/eligible"] < 100000
    assert result["search/pool_errors_mean"] == result["search/eligible_errors"]
    records = {r["method"]: r for r in read_jsonl(Path(cfg.paths.output_dir) / "methods.jsonl")}
    assert max(records["low_confidence"]["sdr_sd"]) < 1e-9         # same pool, same ranking: no spread
    assert max(records["random"]["sdr_sd"]) > 0                    # random draws still differ


def test_a_person_answers_in_the_terminal_and_a_rerun_resumes(biased_svm: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from advaudit.tasks import examine

    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "n")
    overrides = search_overrides(biased_svm, "oracle=cli", "search=low_confidence", "audit.budget=3",
                                 "audit.report_at=[3]", "audit.compare=[]")
    cfg = compose_config("examine", overrides, tmp_path)
    result = examine(cfg)
    answers = read_jsonl(Path(cfg.paths.output_dir) / "oracle" / "answers.jsonl")
    assert len(asked) == 3 and len(answers) == 3 and all(a["is_error"] for a in answers)
    assert result["search/replications"] == 1 and result["search/eligible_errors"] is None
    assert result["search/sdr@3"] > 0   # every answer was "wrong prediction"
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("answered items must not be asked again"))
    shutil.rmtree(Path(cfg.paths.output_dir) / "units")  # the finished method is gone: only the answers are kept
    examine(cfg)


@pytest.mark.slow
def test_every_method_is_measured_with_the_audits_coverage_width_not_bansal_welds(biased_svm: Path,
                                                                                   tmp_path: Path) -> None:
    from advaudit.tasks import examine

    base = search_overrides(biased_svm, "search=random", "audit.compare=[low_confidence]", "audit.replications=5",
                            "audit.budget=5", "audit.report_at=[5]")
    runs = {name: examine(compose_config("examine", [*base, *extra], tmp_path / name)) for name, extra in (
        ("paper", []), ("bw_wide", ["search.bansal_weld.variance=1.0"]), ("wide", ["audit.coverage_variance=1.0"]))}
    for method in ("random", "low_confidence"):
        key = f"search/{method}/coverage@5"
        assert runs["bw_wide"][key] == runs["paper"][key]   # another method's setting changes no score here
        assert runs["wide"][key] != runs["paper"][key]      # the audit-level width does
        assert runs["wide"][f"search/{method}/errors@5"] == runs["paper"][f"search/{method}/errors@5"]
