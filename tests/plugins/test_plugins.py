"""A part defined only here plugs in as one class plus one YAML file: an examiner, run by examine.

The YAML goes to a config folder of the test's own (``hydra.searchpath``, as ``--config-dir`` does on
the command line); nothing in advaudit names the class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest
import torch
from torch import Tensor

from advaudit.errors import AdvauditError
from advaudit.examiners import build_examiner
from advaudit.examiners.protocol import HistoryMixin
from advaudit.core.records import read_jsonl
from advaudit.tasks import examine
from tests.conftest import worst_case_overrides

EXAMINER_YAML = """\
_target_: tests.plugins.test_plugins.GridExaminer
_partial_: true
name: grid
q: 3
level: 0.25
"""


class GridExaminer(HistoryMixin):
    """Proposes ``q`` points on the cube's diagonal, ``level`` apart, the same every step: ``[N, q, C]``."""

    def __init__(self, n_instances: int, n_dims: int, q: int, level: float, seed: int,
                 device: str | torch.device, periodic: Sequence[bool] | None) -> None:
        self._init_history(n_instances, n_dims, q)
        self.level, self.told = level, 0

    def ask(self) -> Tensor:
        steps = torch.arange(self.q, dtype=torch.float32) * self.level
        return steps[None, :, None].expand(self.n_instances, self.q, self.n_dims).clone()

    def tell(self, s: Tensor, loss: Tensor) -> None:
        self._record(s, loss)
        self.told += 1

    def state_dict(self) -> dict[str, Any]:
        return {**self._history_state(), "told": self.told}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        self.told = int(state["told"])


@pytest.fixture
def plugin_conf(tmp_path: Path) -> Path:
    folder = tmp_path / "my_conf"
    (folder / "examiner").mkdir(parents=True)
    (folder / "examiner" / "grid.yaml").write_text(EXAMINER_YAML)
    return folder


def test_an_examiner_defined_only_here_runs_a_real_audit(make_cfg, tiny_shapes_target: Path, plugin_conf: Path) -> None:
    overrides = [o for o in worst_case_overrides(tiny_shapes_target) if not o.startswith("examiner")]
    cfg = make_cfg("examine", [*overrides, f"hydra.searchpath=[file://{plugin_conf}]", "examiner=grid",
                               "audit.budget=6", "audit.report_budgets=[0,6]", "audit.selection=random",
                               "audit.n_instances=2"])
    assert cfg.examiner.level == 0.25
    result = examine(cfg)
    records = read_jsonl(Path(cfg.paths.output_dir) / "steps.jsonl")
    assert result["q"] == 3 and result["queries_per_instance"] == 6
    # 2 instances x 2 steps, each step the examiner's own 3 diagonal points: evenly spaced in every
    # searched factor (unit 0, 0.25, 0.5 mapped linearly to factor units)
    assert len(records) == 2 * 2
    for record in records:
        first = [row[0] for row in record["s"]]
        assert first[1] - first[0] == pytest.approx(first[2] - first[1], rel=1e-4) and first[1] > first[0]
    state = torch.load(Path(cfg.paths.output_dir) / "examiner_state.pt", weights_only=True)
    assert state["examiner"]["told"] == 2


def test_a_key_the_plugged_in_class_does_not_take_is_refused() -> None:
    config = {"_target_": "tests.plugins.test_plugins.GridExaminer", "name": "grid", "q": 3, "level": 0.5,
              "levle": 0.1}
    with pytest.raises(AdvauditError, match=r"examiner has unknown keys \['levle'\].*examiner.level"):
        build_examiner(config, 2, 3)
    right = {k: v for k, v in config.items() if k != "levle"}
    with pytest.raises(AdvauditError, match="examiner.seed is supplied by the audit"):
        build_examiner({**right, "seed": 3}, 2, 3)
    examiner = build_examiner(right, 2, 3)
    assert examiner.ask().shape == (2, 3, 3) and examiner.ask()[0, :, 0].tolist() == [0.0, 0.5, 1.0]
