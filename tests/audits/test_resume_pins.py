"""Every audit resumes an interrupted run dir to the same result.json as an uninterrupted run, and
refuses a run dir that holds another examination (tiny sizes, real data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from advaudit.core.records import read_jsonl
from advaudit.errors import AdvauditError
from tests.conftest import compose_config, worst_case_overrides

# keys that measure wall time: the only ones an interrupted run may report differently
_TIMING = ("seconds", "per_second", "queries/s")


def _numbers(run: Path) -> dict:
    """``<run>/result.json`` without its wall-time keys and the config, the run dir's path written as ``<run>``."""
    record = json.loads((run / "result.json").read_text().replace(str(run), "<run>"))
    return {k: v for k, v in record.items() if not any(t in k for t in _TIMING) and k != "config"}


def _examine(overrides: list[str], root: Path) -> dict:
    from advaudit.tasks import examine

    return examine(compose_config("examine", overrides, root))


@pytest.mark.slow
@pytest.mark.parametrize("examiner", ["random", "rl"])
def test_worst_case_resumes_to_the_same_result(examiner: str, tiny_shapes_target: Path, tmp_path: Path) -> None:
    overrides = worst_case_overrides(tiny_shapes_target, f"examiner={examiner}", "examiner.q=4", "audit.budget=12",
                                     "audit.report_budgets=[0,4,12]")
    _examine(overrides, tmp_path / "full")
    with pytest.raises(KeyboardInterrupt):
        _examine([*overrides, "audit.stop_after_steps=1"], tmp_path / "killed")
    _examine(overrides, tmp_path / "killed")
    full, resumed = tmp_path / "full" / "run", tmp_path / "killed" / "run"
    assert _numbers(resumed) == _numbers(full)
    assert len(read_jsonl(resumed / "steps.jsonl")) == len(read_jsonl(full / "steps.jsonl"))
    with pytest.raises(AdvauditError, match="different"):  # another examination in the same run dir
        _examine([*overrides, "seed=5"], tmp_path / "killed")


@pytest.mark.slow
def test_error_search_resumes_to_the_same_result(biased_svm: Path, tmp_path: Path) -> None:
    overrides = [f"target={biased_svm}", "experiment=error_search/table", "logger=none", "search=bansal_weld",
                 "audit.pool_size=40", "audit.replications=8", "audit.budget=6", "audit.report_at=[3,6]",
                 "audit.compare=[random,low_confidence,lakkaraju,facility_locations]", "audit.pool_chunk=3"]
    _examine(overrides, tmp_path / "full")
    _examine(overrides, tmp_path / "killed")
    killed = tmp_path / "killed" / "run"
    units = sorted((killed / "units" / "method_curves").glob("*.pt"))
    assert len(units) == 5
    for unit in units[1:]:  # killed in its second method: the later ones never reached disk
        unit.unlink()
    queries = [killed / "queries" / f"{unit.stem[3:]}.jsonl" for unit in units[1:]]
    assert all(len(path.read_text().splitlines()) == 3 for path in queries)  # 8 pools in chunks of 3
    queries[0].write_text(queries[0].read_text().splitlines(keepends=True)[0])  # its first chunk only
    for path in queries[1:]:
        path.unlink()
    (killed / "result.json").unlink()
    _examine(overrides, tmp_path / "killed")
    assert _numbers(killed) == _numbers(tmp_path / "full" / "run")


def _fault_overrides(target_path: Path, tmp_path: Path, *extra: str) -> list[str]:
    """Fault tests of ``target_path`` with an untrained generator, from the class the target most often sees in it."""
    from tests.faults.test_fault_tests import untrained_generator_for

    target, net, _, generator = untrained_generator_for(target_path, tmp_path)
    with torch.no_grad():
        labels = target.logits(net(torch.randn(200, 16), torch.randint(10, (200,)))).argmax(1)
    source = int(labels.bincount(minlength=10).argmax())
    return [f"target={target_path}", f"generator={generator}", "audit=fault_tests", "logger=none",
            f"audit.source_class={source}", f"audit.target_class={(source + 1) % 10}", "audit.eps=50", *extra]


@pytest.mark.slow
def test_fault_tests_resume_to_the_same_result(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    overrides = _fault_overrides(tiny_fmnist_target, tmp_path, "audit.n_seeds=6", "audit.chunk=3",
                                 "audit.max_steps=10", "audit.pixel.l2.steps=5", "audit.pixel.linf.steps=5")
    _examine(overrides, tmp_path / "full")
    _examine(overrides, tmp_path / "killed")
    killed = tmp_path / "killed" / "run"
    units = sorted((killed / "units").rglob("*.pt"))
    assert len(units) == 6  # 2 chunks of 3 seeds for each of generator, pixel_l2, pixel_linf
    for unit in units[len(units) // 2:]:  # killed half-way: the later chunks never reached disk
        unit.unlink()
    (killed / "result.json").unlink()
    _examine(overrides, tmp_path / "killed")
    full = tmp_path / "full" / "run"
    assert _numbers(killed) == _numbers(full)
    for key, value in torch.load(full / "tests.pt", weights_only=True).items():
        assert torch.equal(torch.load(killed / "tests.pt", weights_only=True)[key], value), key


@pytest.mark.slow
@pytest.mark.parametrize("audit", ["error_search", "fault_tests"])
def test_a_run_dir_of_another_audit_config_is_refused(audit: str, biased_svm: Path, tiny_fmnist_target: Path,
                                                      tmp_path: Path) -> None:
    if audit == "error_search":
        base = [f"target={biased_svm}", "experiment=error_search/table", "logger=none", "search=random",
                "audit.pool_size=20", "audit.replications=2", "audit.budget=3", "audit.report_at=[3]",
                "audit.compare=[]"]
        changed = "audit.tau=0.7"
    else:
        base = _fault_overrides(tiny_fmnist_target, tmp_path, "audit.n_seeds=2", "audit.max_steps=2", "audit.pixel={}")
        changed = "audit.eps=40"
    _examine(base, tmp_path)
    with pytest.raises(AdvauditError, match="different"):
        _examine([*base, changed], tmp_path)
