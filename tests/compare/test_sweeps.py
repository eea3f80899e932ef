"""Sweeps: checkpoint globs and lists, threads per job, the end-of-multirun callback, real launchers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from advaudit.errors import AdvauditError
from advaudit.sweep.callbacks import SweepEnd
from advaudit.sweep.resolvers import cores_per_job
from advaudit.sweep.targets import expand_target_argv
from tests.compare.fixtures import write_failed, write_worst_case

REPO = Path(__file__).resolve().parents[2]


def test_glob_and_list_expand_into_a_quoted_multirun(tmp_path: Path) -> None:
    for run in ("0", "1", "10"):
        (tmp_path / run / "checkpoints").mkdir(parents=True)
        (tmp_path / run / "checkpoints" / "epoch=03.pt").write_bytes(b"x")
    argv = expand_target_argv(["examine.py", "audit=evaluate", f"target=glob:{tmp_path}/*/checkpoints/*.pt"])
    assert argv[1] == "--multirun" and argv[2] == "audit=evaluate"
    expected = [f"{tmp_path}/{r}/checkpoints/epoch=03.pt" for r in ("0", "1", "10")]
    assert argv[3] == "target=" + ",".join(f"'{p}'" for p in expected)
    listing = tmp_path / "targets.txt"
    listing.write_text("# the two to compare\n0/checkpoints/epoch=03.pt\n\n" f"{expected[2]}  # absolute\n")
    argv = expand_target_argv(["examine.py", "-m", f"target=list:{listing}"])
    assert argv == ["examine.py", "-m", f"target='{expected[0]}','{expected[2]}'"]
    single = expand_target_argv(["examine.py", f"target=glob:{tmp_path}/10/checkpoints/*.pt"])
    assert single == ["examine.py", f"target='{expected[2]}'"]           # one match: no multirun added
    assert expand_target_argv(["examine.py", "target=a.pt"]) == ["examine.py", "target=a.pt"]
    with pytest.raises(AdvauditError, match="matches no file"):
        expand_target_argv(["examine.py", f"target=glob:{tmp_path}/*/nothing.pt"])
    with pytest.raises(AdvauditError, match="no such file"):
        expand_target_argv(["examine.py", f"target=list:{tmp_path}/absent.txt"])


def test_threads_per_job_share_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert [cores_per_job(n) for n in (1, 2, 3, 8, 16, -1)] == [8, 4, 2, 1, 1, 1]
    assert OmegaConf.create({"t": "${cores_per_job:4}"}).t == 2


def _sweep_config(sweep_dir: Path) -> object:
    return OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep_dir)}}, "task_name": "examine"})


def test_sweep_end_compares_lists_failures_and_exits_non_zero(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    write_worst_case(sweep / "0", "A.pt", 0, np.full(8, 0.3), np.zeros(8, bool))
    write_worst_case(sweep / "1", "B.pt", 0, np.full(8, 0.6), np.zeros(8, bool))
    write_failed(sweep / "2", "missing.pt", 0, "checkpoint missing.pt does not exist")
    callback = SweepEnd(compare=True, replay=False, fail_on_error=True, wandb=False, gate=None, margin=0.0)
    with pytest.raises(SystemExit) as ended:
        callback.on_multirun_end(_sweep_config(sweep))
    assert ended.value.code == 2                                      # only user errors
    failures = json.loads((sweep / "failures.json").read_text())
    assert [Path(f["run_dir"]).name for f in failures] == ["2"] and "does not exist" in failures[0]["error"]
    text = (sweep / "comparison" / "comparison.md").read_text()
    # 8 instances all 0.3 lower: the exact Wilcoxon two-sided p is 2 / 2^8; the primary question (E_T) is its
    # own Holm family over its one pair, and the evidence (worst, failure: McNemar p = 1) another of 2 tests
    assert "Failed runs" in text and "A is weaker than B on E_T" in text and "p = 0.0078" in text
    assert "Holm-corrected over the 1 pair of the primary question 0.0078" in text
    assert "Holm-corrected over the evidence's 2 tests 0.016" in text
    killed = sweep / "3" / ".hydra"                                  # a job killed before writing a result
    killed.mkdir(parents=True)
    (killed / "overrides.yaml").write_text("[]\n")
    (sweep / "multirun.yaml").write_text("{}\n")
    with pytest.raises(SystemExit) as ended:
        callback.on_multirun_end(_sweep_config(sweep))
    assert ended.value.code == 1                                      # not all failures are user errors
    clean = tmp_path / "clean"
    write_worst_case(clean / "0", "A.pt", 0, np.full(6, 0.3), np.zeros(6, bool))
    SweepEnd(compare=True, replay=False, fail_on_error=True, wandb=False, gate=None, margin=0.0).on_multirun_end(_sweep_config(clean))   # no failure: returns
    assert not (clean / "failures.json").exists() and (clean / "comparison" / "comparison.json").exists()


def _examine(args: list[str], tmp_path: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "WANDB_MODE": "disabled",
           "HYDRA_FULL_ERROR": "0"}
    return subprocess.run([sys.executable, "examine.py", *args, f"paths.root_dir={tmp_path}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("launcher,setting,threads", [
    ("parallel", "hydra.launcher.n_jobs=2", cores_per_job(2)),      # usable cores // 2 jobs (1 on 2 cores)
    ("submitit", "hydra.launcher.cpus_per_task=2", 2)])              # the cores each job is given
def test_real_two_job_sweep_through_a_launcher(launcher: str, setting: str, threads: int, tiny_fmnist_target: Path,
                                               tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    done = _examine(["-m", f"hydra/launcher={launcher}", setting, "audit=evaluate", f"target={tiny_fmnist_target}",
                     "seed=0,1", f"hydra.sweep.dir={sweep}"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads((sweep / str(i) / "result.json").read_text()) for i in (0, 1)]
    assert [r["config"]["seed"] for r in results] == [0, 1] and all(r["status"] == "ok" for r in results)
    assert [r["config"]["threads"] for r in results] == [threads, threads]
    if launcher == "submitit":
        assert list((sweep / ".submitit").rglob("*_log.out"))           # run by submitit's local executor
    comparison = json.loads((sweep / "comparison" / "comparison.json").read_text())
    assert comparison["groups"][0]["checkpoints"][0]["n_seeds"] == 2


@pytest.mark.slow
def test_sweep_with_a_bad_path_finishes_the_others_and_exits_non_zero(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    import advaudit.cli

    if not hasattr(advaudit.cli, "run_cli"):
        pytest.skip("needs the multirun failure record (advaudit.cli.run_cli)")
    sweep = tmp_path / "sweep"
    listing = tmp_path / "targets.txt"
    listing.write_text(f"{tmp_path}/missing/target.pt\n{tiny_fmnist_target}\n")
    done = _examine(["audit=evaluate", f"target=list:{listing}", f"hydra.sweep.dir={sweep}"], tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "1 of 2 jobs failed" in done.stderr and "missing/target.pt" in done.stderr
    assert json.loads((sweep / "1" / "result.json").read_text())["status"] == "ok"
    failures = json.loads((sweep / "failures.json").read_text())
    assert [Path(f["run_dir"]).name for f in failures] == ["0"] and failures[0]["error_kind"] == "user"
