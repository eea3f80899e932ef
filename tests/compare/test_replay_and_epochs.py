"""Real worst-case runs compared with replay, real evaluate runs paired, and epoch checkpoints."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from advaudit.compare import compare_runs
from tests.conftest import TINY_SHAPES, compose_config, worst_case_overrides


@pytest.fixture(scope="module")
def second_shapes_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another tiny ShapeWorld CNN (other seed): a second checkpoint to compare."""
    from advaudit.tasks import train

    tmp = tmp_path_factory.mktemp("shapes_target_b")
    return Path(train(compose_config("train", ["model=cnn", "seed=7", *TINY_SHAPES], tmp))["checkpoint"])


def _examine_pair(a: Path, b: Path, tmp_path: Path) -> dict:
    from advaudit.tasks import examine

    for name, target in (("a", a), ("b", b)):
        cfg = compose_config("examine", worst_case_overrides(
            target, "audit.selection=random", "audit.n_instances=8", "audit.report_budgets=[4,12]"), tmp_path / name)
        examine(cfg)
    [group] = compare_runs([tmp_path / "a", tmp_path / "b"], tmp_path / "out")["groups"]
    assert not group["notes"], group["notes"]                 # same 8 instances, same seed: fully paired
    return group


@pytest.mark.slow  # about a minute on 2 cores: make test stays under 15 minutes; run with -m slow
def test_replay_of_identical_weights_transfers_every_failure(tiny_shapes_target: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin" / "checkpoints" / "target.pt"
    twin.parent.mkdir(parents=True)
    twin.write_bytes(tiny_shapes_target.read_bytes())
    group = _examine_pair(tiny_shapes_target, twin, tmp_path)
    replay = group["replay"]
    a, b = str(tiny_shapes_target), str(twin)
    assert replay["true_prob"][a][a] == pytest.approx(replay["true_prob"][a][b], abs=1e-6)
    assert replay["reproduced"] == {a: 1.0, b: 1.0}      # re-rendering gives back the recorded worst cases
    assert replay["source_failures"][a] > 0              # the seeded examination finds failures to transfer
    assert replay["transfer"][a] == {a: 1.0, b: 1.0}
    worst = next(r for r in group["pairs"] if r["metric"] == "examine/worst")
    assert worst["diff"] == pytest.approx(0.0, abs=1e-6) and worst["p"] == 1.0
    assert worst["verdict"].startswith("No difference")
    assert (tmp_path / "out" / f"replay_{group['slug']}.png").exists()


@pytest.mark.slow
def test_replay_rescored_worst_conditions_on_every_checkpoint(tiny_shapes_target: Path, second_shapes_target: Path,
                                                               tmp_path: Path) -> None:
    group = _examine_pair(tiny_shapes_target, second_shapes_target, tmp_path)
    replay = group["replay"]
    a, b = str(tiny_shapes_target), str(second_shapes_target)
    for source in (a, b):
        if replay["source_failures"][source]:
            # a checkpoint's own worst valid conditions, re-rendered from its config, fail it again
            assert replay["transfer"][source][source] == 1.0
        for scored in (a, b):
            assert 0.0 <= replay["true_prob"][source][scored] <= 1.0
    rows = __import__("pandas").read_csv(tmp_path / "out" / f"replay_{group['slug']}.csv")
    own = rows[rows["source"] == rows["scored"]]
    # re-scoring a checkpoint's worst conditions gives back its recorded worst true-class probability
    for source in (a, b):
        recorded = {r["instance"]: r["worst"] for r in __import__("json").loads(
            (tmp_path / ("a" if source == a else "b") / "run" / "result.json").read_text())["per_instance"]}
        mine = own[own["source"] == source]
        assert len(mine) > 0
        for instance, prob in zip(mine["instance"], mine["true_prob"]):
            assert prob == pytest.approx(recorded[instance], abs=1e-4)
    assert (tmp_path / "out" / f"replay_{group['slug']}.png").exists()
    assert (tmp_path / "out" / f"factors_{group['slug']}.png").exists()
    assert {r["metric"] for r in group["pairs"]} >= {"examine/worst", "examine/E_T", "examine/failure_rate"}


def test_evaluate_runs_are_paired_per_test_item(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    from advaudit.tasks import examine

    for seed in (0, 1):
        examine(compose_config("examine", [f"target={tiny_fmnist_target}", "audit=evaluate", "logger=none",
                                           f"seed={seed}"], tmp_path / str(seed)))
    summary = compare_runs([tmp_path], tmp_path / "out")
    assert not summary["kept_apart"], summary["kept_apart"]
    [group] = summary["groups"]
    accuracy = next(r for r in group["checkpoints"] if r["metric"] == "evaluate/acc")
    # evaluation does not depend on the seed: two identical replications, a zero-width interval
    assert accuracy["interval_over"] == "seeds" and accuracy["lo"] == accuracy["hi"] == accuracy["mean"]
    classes = {r["class"] for r in group["per_class"]}
    assert len(classes) == 10 and all(r["n"] > 0 for r in group["per_class"])


class _Trainer(SimpleNamespace):
    sanity_checking = False
    is_global_zero = True
    loggers: list = []


def test_epoch_targets_keep_every_epoch_or_the_best_k(tmp_path: Path) -> None:
    from advaudit.errors import AdvauditError
    from advaudit.models.training.epoch_checkpoints import EpochTargets
    from advaudit.models import load_target
    from advaudit.models.nets import build_net
    from advaudit.models.targets.target import TorchTarget

    meta = {"arch": "mlp", "arch_params": {}, "class_names": ["a", "b"], "input_shape": [3],
            "normalization": {"mean": [0.0] * 3, "std": [1.0] * 3}}
    module = SimpleNamespace(target=TorchTarget(build_net("advaudit.models.nets.MLP", [3], 2), meta))
    accuracies = [0.5, 0.7, 0.6, 0.4]
    named = {"filename": "epoch_{epoch:02d}", "mode": "max"}
    every = EpochTargets(str(tmp_path / "all"), save_top_k=-1, monitor=None, **named)
    best = EpochTargets(str(tmp_path / "best"), save_top_k=2, monitor="val/acc", **named)
    for epoch, acc in enumerate(accuracies):
        trainer = _Trainer(current_epoch=epoch, global_step=10 * (epoch + 1),
                           callback_metrics={"val/acc": torch.tensor(acc)})
        every.on_validation_end(trainer, module)
        best.on_validation_end(trainer, module)
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == [f"epoch_0{i}.pt" for i in range(4)]
    assert sorted(p.name for p in (tmp_path / "best").iterdir()) == ["epoch_01.pt", "epoch_02.pt"]
    loaded = load_target(tmp_path / "all" / "epoch_02.pt")
    assert loaded.class_names == ["a", "b"]
    payload = torch.load(tmp_path / "all" / "epoch_02.pt", weights_only=True)
    assert payload["epoch"] == 2 and payload["global_step"] == 30 and payload["metrics"]["val/acc"] == pytest.approx(0.6)
    with pytest.raises(AdvauditError, match="monitor"):
        EpochTargets(str(tmp_path), save_top_k=3, monitor=None, **named)


def test_training_writes_each_epoch_as_an_auditable_target(tmp_path: Path) -> None:
    from advaudit.models import load_target
    from advaudit.tasks import train

    cfg = compose_config("train", ["model=mlp", "dataset=fashion_mnist", "dataset.limit={train:200,val:100,test:100}",
                                   "trainer.max_epochs=2", "logger=none", "callbacks.model_checkpoint.save_top_k=-1", "~callbacks.progress",
                                   "+trainer.enable_model_summary=false"],
                         tmp_path)
    result = train(cfg)
    epochs = sorted((Path(result["checkpoint"]).parent / "epochs").glob("*.pt"))
    assert [p.name for p in epochs] == ["epoch_00.pt", "epoch_01.pt"]
    assert all(load_target(p).num_classes == 10 for p in epochs)
