"""Interrupted runs lose nothing: SIGINT / SIGTERM to a real examination and a real training run.

Each test starts the real CLI in a subprocess, waits until it has written records, sends the
signal, checks the exit code (130 / 143), the one-line message and the failure record, then reruns
the same command into the same run dir: the records written before survive unchanged and the run
resumes from them. A rerun with a different config into that dir is refused (training: the keys that changed are named).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advaudit.core.records import read_jsonl
from tests.conftest import REPO

ENV = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1",
       "MKL_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "", "ADVAUDIT_DEBUG": ""}


def _interrupt_when(cmd: list[str], ready: callable, signum: int, timeout: float = 240) -> subprocess.CompletedProcess:
    """Start ``cmd``, send ``signum`` as soon as ``ready()`` holds, and wait for it to end."""
    process = subprocess.Popen(cmd, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, f"ended before it could be interrupted: {process.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, "no records appeared in time"
        time.sleep(0.05)
    process.send_signal(signum)
    out, err = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(cmd, process.returncode, out, err)


def _examine(target: Path, run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "examine.py", f"target={target}", "audit=worst_case", "world=shapes",
            "world.image_size=16", "world.instances_per_class={train:2,val:2,test:2}", "examiner=random",
            "examiner.q=4", "audit.budget=200", "audit.report_budgets=[0,200]", "audit.selection_renders=2",
            "audit.checkpoint_every=1", "logger=none", "threads=1", f"hydra.run.dir={run_dir}", *extra]


def _assert_interrupted(done: subprocess.CompletedProcess, run_dir: Path, name: str, code: int) -> None:
    assert done.returncode == code, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    assert f"interrupted by {name}" in done.stderr
    record = json.loads((run_dir / "result.json").read_text())
    assert record["status"] == "failed" and record["error_kind"] == "interrupted" and name in record["error"]


@pytest.mark.slow  # ~100 s on the loaded machine (3 processes); the training test below stays in make test
@pytest.mark.parametrize("signum,name,code", [(signal.SIGINT, "SIGINT", 130), (signal.SIGTERM, "SIGTERM", 143)])
def test_an_interrupted_examination_keeps_its_records_and_resumes(tiny_shapes_target: Path, tmp_path: Path,
                                                                  signum: int, name: str, code: int) -> None:
    run_dir = tmp_path / "run"
    steps_file = run_dir / "steps.jsonl"
    cmd = _examine(tiny_shapes_target, run_dir)
    done = _interrupt_when(cmd, lambda: len(read_jsonl(steps_file)) >= 20, signum)
    _assert_interrupted(done, run_dir, name, code)
    before = read_jsonl(steps_file)
    assert (run_dir / "examiner_state.pt").exists() and len(before) >= 20

    rerun = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"
    after = read_jsonl(steps_file)
    n_instances = len({r["instance"] for r in after})
    assert sorted({r["step"] for r in after}) == list(range(200 // 4))
    assert len(after) == n_instances * 200 // 4  # every step once: nothing lost, nothing doubled
    # every step checkpointed before the signal (all but the last one written) survives unchanged
    kept = [r for r in before if r["step"] < max(r["step"] for r in before)]
    assert kept and kept == after[:len(kept)]

    changed = subprocess.run(_examine(tiny_shapes_target, run_dir, "audit.budget=100", "audit.report_budgets=[0,100]"),
                             cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)
    assert changed.returncode == 2 and "Traceback" not in changed.stderr
    assert "holds a different examination" in changed.stderr  # the examination's own key refuses to mix
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"  # the finished run's record stays
    assert json.loads((run_dir / "result.failed.json").read_text())["error_kind"] == "user"


@pytest.mark.parametrize("signum,name,code", [(signal.SIGINT, "SIGINT", 130), (signal.SIGTERM, "SIGTERM", 143)])
def test_a_signal_after_two_steps_keeps_exactly_those_steps_and_the_rerun_ends_as_if_never_stopped(
        tiny_shapes_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int, name: str,
        code: int) -> None:
    """The fast version of the test above: the CLI runs in this process (:mod:`tests.cli_batch`) and the
    signal arrives at a known point, right after the second of four steps is written."""
    import torch

    import advaudit.audits.worst_case as worst_case
    from tests.cli_batch import run_case

    def args(run_dir: Path, *extra: str) -> list[str]:
        return _examine(tiny_shapes_target, run_dir, "audit.budget=16", "audit.report_budgets=[0,16]", *extra)[2:]

    written: list[int] = []

    def append_then_signal(path: Path, records: list[dict]) -> None:
        append_jsonl(path, records)
        if Path(path).name == "steps.jsonl":
            written.append(len(records))
            if len(written) == 2:
                os.kill(os.getpid(), signum)  # the CLI's handler turns it into an interruption here

    monkeypatch.setenv("ADVAUDIT_PROGRESS", "0")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # never let a stray SIGTERM end pytest itself
    append_jsonl = worst_case.append_jsonl
    run_dir = tmp_path / "run"
    try:
        monkeypatch.setattr(worst_case, "append_jsonl", append_then_signal)
        stopped = run_case("examine.py", args(run_dir))
        record = json.loads((run_dir / "result.json").read_text())
        before = read_jsonl(run_dir / "steps.jsonl")
        state = torch.load(run_dir / "examiner_state.pt", weights_only=True)
        monkeypatch.setattr(worst_case, "append_jsonl", append_jsonl)
        if name == "SIGTERM":  # the rerun is the same for either signal: run it once
            rerun = run_case("examine.py", args(run_dir))
            changed = run_case("examine.py", args(run_dir, "examiner.q=2"))
            never_stopped = run_case("examine.py", args(tmp_path / "uninterrupted"))
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    n = written[0]
    assert stopped["code"] == code and f"interrupted by {name}" in stopped["stderr"], stopped["stderr"][-3000:]
    assert "Traceback" not in stopped["stdout"] + stopped["stderr"]
    assert len(written) == 2 and n > 0
    assert record["status"] == "failed" and record["error_kind"] == "interrupted" and name in record["error"]
    assert [r["step"] for r in before] == [0] * n + [1] * n  # both written steps, nothing after the signal
    assert state["step"] == 1  # the second step's checkpoint was never written
    if name != "SIGTERM":
        return
    assert rerun["code"] == 0, rerun["stderr"][-3000:]
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"
    after = read_jsonl(run_dir / "steps.jsonl")
    assert [r["step"] for r in after] == [0] * n + [1] * n + [2] * n + [3] * n  # every step once
    assert after[:n] == before[:n]  # the checkpointed step survives unchanged
    # the resumed examination proposes and scores exactly what an uninterrupted one does
    assert after == read_jsonl(tmp_path / "uninterrupted" / "steps.jsonl")
    finished = json.loads((run_dir / "result.json").read_text())
    reference = json.loads((tmp_path / "uninterrupted" / "result.json").read_text())
    assert finished["examine/E_T@16"] == reference["examine/E_T@16"]

    assert changed["code"] == 2 and "holds a different examination" in changed["stderr"]
    assert "Traceback" not in changed["stderr"]
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"  # the finished run's record stays
    assert json.loads((run_dir / "result.failed.json").read_text())["error_kind"] == "user"


@pytest.mark.slow  # about a minute on 2 cores: make test stays under 15 minutes; run with -m slow
def test_an_interrupted_training_run_resumes_from_its_last_epoch(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    resume = run_dir / "checkpoints" / "resume.ckpt"
    cmd = [sys.executable, "train.py", "model=mlp", "dataset.limit={train:200,val:100,test:100}",
           "trainer.max_epochs=12", "logger=none", "callbacks=none", "threads=1", "+trainer.enable_progress_bar=false",
           f"hydra.run.dir={run_dir}"]
    done = _interrupt_when(cmd, resume.exists, signal.SIGTERM)
    _assert_interrupted(done, run_dir, "SIGTERM", 143)
    assert resume.exists() and not (run_dir / "checkpoints" / "target.pt").exists()

    rerun = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["epochs"] == 12
    assert 1 <= result["resumed_from_epoch"] < 12

    changed = subprocess.run([*cmd, "model.optimizer.lr=0.01"], cwd=REPO, env=ENV, capture_output=True, text=True,
                             timeout=300)
    assert changed.returncode == 2 and "Traceback" not in changed.stderr
    assert "holds results of a different config (changed: model.optimizer.lr: 0.001 -> 0.01)" in changed.stderr
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"  # the finished run's record stays
