"""No number under the wrong class: a target whose class list is permuted (its outputs permuted to match) is the
same classifier, so every audit and world scores it exactly as the ordered one; a misspelt class is refused with
the closest name; a rename said in the target block is paired; pairing by position happens only when asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from advaudit.compare import compare_runs
from advaudit.confutil import override_value
from advaudit.errors import AdvauditError
from advaudit.models.targets.formats.checkpoint import load_checkpoint, save_checkpoint
from advaudit.tasks import examine
from tests.conftest import compose_config, worst_case_overrides

#: the user's output j is the data's class PERMUTATION[j]
PERMUTATION = [3, 0, 9, 1, 8, 2, 7, 4, 6, 5]
TRANSFORMS = ["audit=worst_case", "world=transforms", "examiner=random", "examiner.q=4", "audit.selection=random",
              "audit.n_instances=6", "audit.budget=8", "audit.report_budgets=[0,8]", "audit.checkpoint_every=1",
              "+world.dataset.limit={train:100,val:60,test:100}",
              # the packaged Fashion-MNIST judge leaves most of 8 queries invalid (worst@0 NaN in both runs)
              "audit.validity.reference=null"]


def permuted_twin(path: Path, out: Path, names: list[str] | None = None) -> Path:
    """``path``'s network with its output rows in :data:`PERMUTATION` order and its class list permuted to match
    (or called ``names``): the same classifier, its classes listed in another order."""
    payload = load_checkpoint(path, kind="target")
    meta, weights = payload["meta"], payload["state_dict"]
    k = len(meta["class_names"])
    head = [key for key, value in weights.items() if key.endswith("weight") and value.ndim == 2 and value.shape[0] == k][-1]
    for key in (head, head[: -len("weight")] + "bias"):
        weights[key] = weights[key][PERMUTATION].clone()
    meta["class_names"] = names or [meta["class_names"][j] for j in PERMUTATION]
    return save_checkpoint(out, payload)


def run(tmp_path: Path, name: str, target: Any, *overrides: str) -> dict[str, Any]:
    value = target if isinstance(target, (str, Path)) else override_value(target)
    return examine(compose_config("examine", [f"target={value}", "logger=none", *overrides], tmp_path / name))


def same_numbers(a: dict[str, Any], b: dict[str, Any], prefix: str) -> None:
    keys = [k for k, v in a.items() if k.startswith(prefix) and isinstance(v, float) and "seconds" not in k]
    assert keys
    for key in keys:
        assert b[key] == pytest.approx(a[key], abs=1e-5), key


@pytest.mark.slow  # about a minute on 2 cores: make test stays under 15 minutes; run with -m slow
def test_worst_case_on_shapes_scores_a_permuted_list_by_name_and_replays_it(tiny_shapes_target: Path, tmp_path: Path) -> None:
    twin = permuted_twin(tiny_shapes_target, tmp_path / "permuted" / "checkpoints" / "target.pt")
    examined = {}
    for name, target in (("ordered", tiny_shapes_target), ("permuted", twin)):
        cfg = compose_config("examine", [*worst_case_overrides(target), "audit.validity.reference=null"], tmp_path / name)
        examined[name] = examine(cfg)
    ordered, permuted = examined["ordered"], examined["permuted"]
    same_numbers(ordered, permuted, "examine/")
    assert [r["worst_predicted"] for r in permuted["per_instance"]] == [r["worst_predicted"] for r in ordered["per_instance"]]
    assert "reordered to the data's class order" in permuted["class_alignment"]["description"]
    assert "- classes: classes paired by name" in (tmp_path / "permuted" / "run" / "report.md").read_text()
    # the comparison replays each one's worst conditions on the other: the same classifier scores them alike
    summary = compare_runs([tmp_path / "ordered" / "run", tmp_path / "permuted" / "run"], tmp_path / "comparison")
    replayed = summary["groups"][0]["replay"]["true_prob"]
    for source, scored in replayed.items():
        values = list(scored.values())
        assert max(values) - min(values) < 1e-5, (source, scored)


def test_a_misspelt_class_is_refused_and_a_said_rename_is_paired(tiny_shapes_target: Path,
                                                                              tmp_path: Path) -> None:
    classes = load_checkpoint(tiny_shapes_target, kind="target")["meta"]["class_names"]
    misspelt = [("botle" if c == "bottle" else c) for c in (classes[j] for j in PERMUTATION)]
    twin = permuted_twin(tiny_shapes_target, tmp_path / "misspelt.pt", misspelt)
    with pytest.raises(AdvauditError, match=r"the target's class 'botle' is not a class of the world \(closest: 'bottle'"):
        run(tmp_path, "misspelt", twin, *worst_case_overrides(tiny_shapes_target)[1:])
    fast = [*worst_case_overrides(tiny_shapes_target)[1:], "audit.validity.reference=null"]
    ordered = run(tmp_path, "ordered", tiny_shapes_target, *fast)
    renamed = run(tmp_path, "renamed", {"path": str(twin), "class_alignment": {"botle": "bottle"}}, *fast)
    same_numbers(ordered, renamed, "examine/")
    assert "renamed: botle as bottle" in renamed["class_alignment"]["description"]


def test_evaluate_and_transforms_score_a_permuted_fashion_mnist_checkpoint_by_name(tiny_fmnist_target: Path,
                                                                                   tmp_path: Path) -> None:
    twin = permuted_twin(tiny_fmnist_target, tmp_path / "permuted.pt")
    for audit, prefix in ((["audit=evaluate"], "evaluate/"), (TRANSFORMS, "examine/")):
        ordered = run(tmp_path, f"ordered_{prefix[:-1]}", tiny_fmnist_target, *audit)
        permuted = run(tmp_path, f"permuted_{prefix[:-1]}", twin, *audit)
        same_numbers(ordered, permuted, prefix)
        if prefix == "evaluate/":
            assert permuted["per_class_acc"] == pytest.approx(ordered["per_class_acc"], abs=1e-6)
            assert list(permuted["per_class_acc"]) == list(ordered["per_class_acc"])   # the data's order
            ordered_evaluation = ordered
    boot = [("boot" if c == "ankle-boot" else c) for c in load_checkpoint(twin, kind="target")["meta"]["class_names"]]
    renamed = permuted_twin(tiny_fmnist_target, tmp_path / "boot.pt", boot)
    with pytest.raises(AdvauditError, match=r"'boot' is not a class of the target's dataset \(closest: 'ankle-boot'"):
        run(tmp_path, "boot", renamed, "audit=evaluate")
    # by position only when asked: the permuted outputs taken in file order are another classifier, and it is said
    by_position = run(tmp_path, "position", {"path": str(renamed), "match_classes": "position"}, "audit=evaluate")
    assert by_position["class_alignment"]["matched"] == "position"
    assert by_position["evaluate/acc"] < ordered_evaluation["evaluate/acc"] - 0.1


@pytest.mark.slow
def test_error_search_and_fault_tests_score_a_permuted_checkpoint_by_name(tiny_fmnist_target: Path,
                                                                          tmp_path: Path) -> None:
    from tests.faults.test_fault_tests import untrained_generator_for

    twin = permuted_twin(tiny_fmnist_target, tmp_path / "permuted.pt")
    search = ["audit=error_search", "audit.critical_class=dress", "audit.tau=0.3", "audit.pool_size=20",
              "audit.replications=3", "audit.budget=5", "audit.report_at=[5]", "audit.compare=[random,low_confidence]",
              "search.adversarial_distance.attack.steps=2"]
    ordered, permuted = (run(tmp_path, f"{n}_search", t, *search) for n, t in (("o", tiny_fmnist_target), ("p", twin)))
    same_numbers(ordered, permuted, "search/")
    target, generator, _, path = untrained_generator_for(tiny_fmnist_target, tmp_path)
    with torch.no_grad():  # the classes this target most often sees in the untrained generator's images
        seen = target.logits(generator(torch.randn(200, 16), torch.randint(10, (200,)))).argmax(1).bincount(minlength=10)
    source, destination = (target.class_names[int(c)] for c in seen.argsort(descending=True)[:2])
    faults = [f"generator={path}", "audit=fault_tests", "audit.n_seeds=4", "audit.max_steps=10",
              "audit.pixel.l2.steps=5", "audit.pixel.linf.steps=5", f"audit.source_class={source}",
              f"audit.target_class={destination}", "audit.eps=50"]
    ordered, permuted = (run(tmp_path, f"{n}_faults", t, *faults) for n, t in (("o", tiny_fmnist_target), ("p", twin)))
    same_numbers(ordered, permuted, "faults/")
    assert permuted["faults/source"] == source and permuted["faults/target"] == destination


def test_a_class_map_in_any_key_order_and_other_predictions_reach_every_report(tmp_path: Path) -> None:
    from advaudit.worlds.shapes.world import CLASSES

    names = list(CLASSES)
    shuffled = {names[j]: [j] for j in PERMUTATION}    # keys in another order than the world's; output 10 unmapped
    block = {"function": "tests.models.user_models.mostly_other", "class_map": shuffled, "input_shape": [3, 16, 16],
             "normalization": "model", "array": "numpy"}
    result = run(tmp_path, "other", block, *worst_case_overrides(Path("unused"))[1:], "audit.validity.reference=null")
    predicted = {r["worst_predicted"] for r in result["per_instance"]}
    assert "(other)" in predicted
    report = (tmp_path / "other" / "run" / "report.md").read_text()
    assert "| (other) |" in report
    # the function gives class j's output to the world's class j, whichever order the map lists them in
    assert result["class_alignment"]["pairs"] == {n: n for n in names}


@pytest.mark.slow
def test_worst_case_on_meshes_scores_a_permuted_list_by_name(tiny_shapes_target: Path, tmp_path: Path) -> None:
    from advaudit.worlds.meshes.export_shapes import export_shapes

    root = tmp_path / "meshes"
    export_shapes(root, {"train": 1, "val": 1, "test": 1}, seed=0)
    twin = permuted_twin(tiny_shapes_target, tmp_path / "permuted.pt")
    overrides = ["audit=worst_case", "world=meshes", f"world.root={root}", "world.image_size=16", "world.spp=2",
                 "world.threads=1", "examiner=random", "examiner.q=2", "audit.budget=4", "audit.report_budgets=[0,4]",
                 "audit.selection_renders=1", f"paths.cache_dir={tmp_path / 'cache'}"]
    ordered = run(tmp_path, "ordered", tiny_shapes_target, *overrides)
    permuted = run(tmp_path, "permuted", twin, *overrides)
    same_numbers(ordered, permuted, "examine/")
