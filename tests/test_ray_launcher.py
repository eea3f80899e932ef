"""The local Ray launcher runs a real two-job sweep, where ``pip install -e '.[ray]'`` installed it (skipped elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from advaudit.core.records import read_json

pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the Ray launcher is not installed (pip install -e '.[ray]')")

ROOT = Path(__file__).resolve().parents[1]
CONTROL = ROOT / "advaudit" / "demo" / "checkpoints" / "control.pt"


@pytest.mark.slow
def test_a_two_job_sweep_runs_on_the_local_ray_launcher(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    env = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "examine.py", "-m", "hydra/launcher=ray_local", "audit=evaluate",
                           f"target={CONTROL}", "seed=0,1", "logger=none", "hydra.launcher.ray.init.num_cpus=2",
                           f"hydra.sweep.dir={sweep}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ray" in (sweep / "multirun.yaml").read_text().lower()
    for job in ("0", "1"):
        result = read_json(sweep / job / "result.json")
        assert result["status"] == "ok" and result["config"]["seed"] == int(job)
        assert result["config"]["threads"] == 1  # ray.remote.num_cpus: one core's torch threads per job
    assert (sweep / "comparison" / "comparison.md").is_file()
