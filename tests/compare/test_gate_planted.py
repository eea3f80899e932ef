"""The regression gate on real examinations: the demo's shipped checkpoints (a control, and one trained
without camera roll 240-360 degrees) examined on ShapeWorld, then gated with the real CLI
(``python -m advaudit.compare ... --gate BASELINE``): exit 1 naming the planted checkpoint, exit 0 on a
control pair (two copies of the control), and a JUnit file that parses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from advaudit.demo import shipped

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin", "WANDB_MODE": "offline",
       "ADVAUDIT_PROGRESS": "0", "HOME": "/tmp"}
# random search's E_T on the demo's examination set-up (30 validation instances drawn with the seed, sun
# fixed per instance): each instance's mean true-class probability over 64 random conditions of the
# default box, one third of which have a camera roll the planted checkpoint never saw
EXAMINE = ["experiment=demo/examine", "examiner=random", "examiner.q=64", "audit.budget=1",
           "audit.budget_unit=iterations", "audit.report_budgets=[1]", "audit.metric=examine/E_T", "logger=none",
           "hydra/launcher=basic", "hydra.callbacks.sweep_end.compare=false", "seed=0", "threads=1"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advaudit.compare", *args, "--no-replay"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=ENV)


@pytest.fixture(scope="module")
def examined(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{checkpoint name: its examination's run folder}`` for control, control_copy and roll_narrowed."""
    root = tmp_path_factory.mktemp("gate")
    shipped.install(root / "train", ["control", "roll_narrowed"])
    copy = root / "train" / "control_copy" / "checkpoints" / "target.pt"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(root / "train" / "control" / "checkpoints" / "target.pt", copy)
    sweep = root / "examine"
    done = subprocess.run([sys.executable, "examine.py", "-m", *EXAMINE,
                           f"target=glob:{root / 'train' / '*' / 'checkpoints' / 'target.pt'}",
                           f"hydra.sweep.dir={sweep}"], cwd=ROOT, capture_output=True, text=True, timeout=900, env=ENV)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    runs = {}
    for result in sweep.glob("*/result.json"):
        runs[Path(json.loads(result.read_text())["target"]).parent.parent.name] = result.parent
    assert sorted(runs) == ["control", "control_copy", "roll_narrowed"]
    return runs


@pytest.mark.slow
def test_gate_fails_the_planted_checkpoint_and_passes_a_control_pair(examined: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "planted"
    done = _cli(str(examined["control"]), str(examined["roll_narrowed"]), "--out", str(out), "--gate", "control/target")
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("gate failed"))
    assert "roll_narrowed/target is weaker than control/target on examine/E_T" in line and "Holm-corrected p" in line
    suite = ET.parse(out / "gate.xml").getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "1" and suite.get("failures") == "1"
    assert "roll_narrowed/target" in ET.tostring(suite, encoding="unicode")

    out = tmp_path / "control"
    done = _cli(str(examined["control"]), str(examined["control_copy"]), "--out", str(out), "--gate", "control/target")
    assert done.returncode == 0, done.stdout + done.stderr
    suite = ET.parse(out / "gate.xml").getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
