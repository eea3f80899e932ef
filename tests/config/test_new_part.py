"""A new built-in examiner is one file plus one YAML: found by the registry, composed, validated and run.

The test copies advaudit's package and ``conf/`` to a temporary folder, adds
``advaudit/examiners/sobol.py`` (the class and its settings dataclass, with a cross-key check) and
``conf/examiner/sobol.yaml`` (which only names the settings), and nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advaudit.registry import settings_modules
from tests.conftest import worst_case_overrides

REPO = Path(__file__).resolve().parents[2]

EXAMINER = '''\
"""Scrambled Sobol points: a low-discrepancy sweep of the unit cube, one sequence per instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional

import torch
from torch import Tensor
from torch.quasirandom import SobolEngine

from advaudit.config import typed
from advaudit.config.part import Part
from advaudit.config.ranges import ranged
from advaudit.config.validation import Context, get
from advaudit.examiners.protocol import HistoryMixin


@dataclass
class SobolExaminerConf(Part):
    """``conf/examiner/sobol.yaml``."""

    config_group: ClassVar[str] = "examiner"
    config_path: ClassVar[str] = "examiner"
    schema_name: ClassVar[Optional[str]] = "sobol_schema"

    _target_: str = "advaudit.examiners.sobol.SobolExaminer"
    _partial_: bool = True
    name: str = "sobol"
    q: int = ranged(8, low=1, integer=True)

    @classmethod
    def check(cls, node: Any, path: str, context: Context) -> None:
        q = get(node, "q")
        if isinstance(q, int) and q >= 1:
            context.require(q & (q - 1) == 0, f"{path}.q={q}: Sobol points balance in powers of 2; use {path}.q=8")


class SobolExaminer(HistoryMixin):
    def __init__(self, n_instances: int, n_dims: int, seed: int = 0, device: Any = "cpu", periodic: Any = None,
                 **settings: Any) -> None:
        self._init_history(n_instances, n_dims, typed(SobolExaminerConf, settings).q)
        self.engines = [SobolEngine(n_dims, scramble=True, seed=int(seed) + i) for i in range(n_instances)]

    def ask(self) -> Tensor:
        return torch.stack([engine.draw(self.q) for engine in self.engines]).float()

    def restrict(self, rows: Tensor) -> None:
        self._restrict_history(rows)
        self.engines = [self.engines[i] for i in rows.tolist()]

    def tell(self, s: Tensor, loss: Tensor) -> None:
        self._record(s, loss)

    def state_dict(self) -> dict[str, Any]:
        return {**self._history_state(), "drawn": [int(e.num_generated) for e in self.engines]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._load_history(state)
        for engine, drawn in zip(self.engines, state["drawn"]):
            engine.reset().fast_forward(drawn)
'''

YAML = "# Scrambled Sobol points. Settings and defaults: SobolExaminerConf in advaudit/examiners/sobol.py.\n" \
       "defaults:\n  - sobol_schema\n  - _self_\n"


def copy_with_sobol(root: Path) -> Path:
    """advaudit, conf/ and examine.py under ``root``, with the Sobol examiner's file and YAML added."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "advaudit", root / "advaudit", ignore=ignore)
    shutil.copytree(REPO / "conf", root / "conf", ignore=ignore)
    shutil.copy(REPO / "examine.py", root / "examine.py")
    (root / "advaudit" / "examiners" / "sobol.py").write_text(EXAMINER)
    (root / "conf" / "examiner" / "sobol.yaml").write_text(YAML)
    return root


def test_the_registry_finds_a_new_examiner_module_by_its_settings(tmp_path: Path) -> None:
    root = copy_with_sobol(tmp_path)
    before = settings_modules(REPO / "advaudit")
    after = settings_modules(root / "advaudit")
    assert "advaudit.examiners.settings" in before and "advaudit.examiners.sobol" not in before
    assert sorted(set(after) - set(before)) == ["advaudit.examiners.sobol"]


SCRIPT = textwrap.dedent('''
    import json, sys
    from hydra import compose, initialize_config_dir
    from advaudit.errors import AdvauditError
    from advaudit.examiners import build_examiner
    from advaudit.registry import SCHEMAS
    from advaudit.validation import validate

    found = [name for group, name, _ in SCHEMAS if group == "examiner"]
    out = {"found": "sobol_schema" in found}
    with initialize_config_dir(config_dir=sys.argv[1], version_base="1.3"):
        cfg = compose("examine", overrides=[f"target={sys.argv[2]}", "examiner=sobol", "logger=none"])
        out["composed"] = [cfg.examiner._target_, cfg.examiner.q]
        validate(cfg, "examine")
        for bad in ("examiner.q=6", "examiner.q=0"):
            try:
                validate(compose("examine", overrides=[f"target={sys.argv[2]}", "examiner=sobol", bad]), "examine")
            except AdvauditError as error:
                out[bad] = str(error)
    examiner = build_examiner(cfg.examiner, n_instances=3, n_dims=2, seed=1)
    s = examiner.ask()
    examiner.tell(s, -s.sum(-1))
    out["asked"] = list(s.shape)
    print(json.dumps(out))
''')


def test_a_new_examiner_is_composed_validated_and_built(tmp_path: Path) -> None:
    root = copy_with_sobol(tmp_path / "repo")
    target = tmp_path / "target.pt"
    target.write_bytes(b"stand-in: validation only checks that the file is there")
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(root / "conf"), str(target)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["found"]
    assert out["composed"] == ["advaudit.examiners.sobol.SobolExaminer", 8]
    assert out["examiner.q=6"] == "examiner.q=6: Sobol points balance in powers of 2; use examiner.q=8"
    assert "examiner.q=0" in out["examiner.q=0"] and ">= 1" in out["examiner.q=0"]
    assert out["asked"] == [3, 8, 2]


@pytest.mark.slow
def test_a_new_examiner_runs_a_worst_case_audit(tmp_path: Path, tiny_shapes_target: Path) -> None:
    """``examine.py examiner=sobol``: the worst-case audit runs it to the budget and records its name."""
    root = copy_with_sobol(tmp_path / "repo")
    overrides = [o for o in worst_case_overrides(tiny_shapes_target) if not o.startswith("examiner")]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    done = subprocess.run([sys.executable, "examine.py", *overrides, "examiner=sobol", "examiner.q=4",
                           f"hydra.run.dir={tmp_path / 'run'}"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert "sobol" in json.dumps(result)
