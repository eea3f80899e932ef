"""Run one step of the demo: print its command, run it with its output in a log file, and print a
short progress line every so often (two jobs at once would interleave their progress bars)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from omegaconf import OmegaConf

from advaudit.models.training.classifier_training import resume_checkpoint, saved_epochs

PROGRESS_EVERY_S = 30.0


def shell_line(args: list[str]) -> str:
    """``python <args>`` quoted as a user would type it in a POSIX shell."""
    return "python " + " ".join(shlex.quote(a) for a in args)


def run_step(title: str, args: list[str], log_path: Path, cwd: Path, status: Callable[[], str],
             every_s: float = PROGRESS_EVERY_S) -> int:
    """Run ``python <args>`` in ``cwd``; its output goes to ``log_path``; returns its exit code.

    While it runs, ``status()`` is printed every ``every_s`` seconds (with the elapsed time).
    """
    print(f"\n== {title}\n$ {shell_line(args)}\n   (log: {log_path})", flush=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        next_report = start + every_s
        while process.poll() is None:
            time.sleep(0.5)
            if time.perf_counter() >= next_report:
                next_report += every_s
                print(f"   {_clock(time.perf_counter() - start)}  {_safe(status)}", flush=True)
    print(f"-- finished in {_clock(time.perf_counter() - start)} (exit code {process.returncode})", flush=True)
    return int(process.returncode)


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def _safe(status: Callable[[], str]) -> str:
    try:
        return status()
    except Exception as error:  # a progress line must never stop the demo
        return f"(progress unreadable: {error})"


def training_status(train_dir: Path, names: list[str], epochs: int) -> str:
    """``control 5/14 epochs, roll_narrowed 4/14 epochs``: epochs finished per training job."""
    parts = []
    for name in names:
        out = train_dir / name
        done = epochs if (out / "checkpoints" / "target.pt").exists() else (saved_epochs(resume_checkpoint(out)) or 0)
        parts.append(f"{name} {done}/{epochs} epochs")
    return ", ".join(parts)


def examination_status(examine_dir: Path, total: int) -> str:
    """``4 examinations: 1 done, rl on roll_narrowed at 20/48 iterations, ...``."""
    jobs = sorted((d for d in examine_dir.glob("*") if (d / ".hydra" / "config.yaml").exists()),
                  key=lambda d: int(d.name) if d.name.isdigit() else 0)
    done, running = 0, []
    for job in jobs:
        if (job / "result.json").exists():
            done += 1
            continue
        cfg = OmegaConf.load(job / ".hydra" / "config.yaml")
        steps = job / "steps.jsonl"
        lines = sum(1 for _ in open(steps)) if steps.exists() else 0
        n = int(cfg.audit.n_instances or 1)
        target = Path(str(cfg.target)).parent.parent.name
        running.append(f"{cfg.examiner.name} on {target} at {lines // n}/{cfg.audit.budget} iterations")
    return f"{done} of {total} examinations done" + ("; " + ", ".join(running) if running else "")
