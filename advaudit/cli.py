"""The command-line boundary: user errors as one line and exit 2, bugs with their traceback.

``train.py`` and ``examine.py`` call :func:`run_cli` with their ``@hydra.main`` function. Exit codes:

* ``0`` — the run finished (``result.json``: ``"status": "ok"``);
* ``1`` — a bug: the full traceback is printed (please report it);
* ``2`` — a user error: a config value, an override Hydra cannot parse or merge, a file that is
  missing or not what was expected. One line, ``error: <what is wrong and the fix>``, no traceback;
* ``130`` / ``143`` — interrupted by SIGINT / SIGTERM; the records written so far are kept and the
  same command (into the same run dir) resumes.

``HYDRA_FULL_ERROR=1`` or ``ADVAUDIT_DEBUG=1`` print the traceback of user errors too. In a
multirun, a job that fails records its failure in its own ``result.json``, logs one line and
returns ``None`` so the sweep goes on (an interrupt still stops the sweep).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType
from typing import Any, Callable

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

import advaudit.registry  # noqa: F401  (registers the structured-config schemas before Hydra composes)
from advaudit.core.run_records import interruption
from advaudit.errors import (EXIT_BUG, EXIT_INTERRUPTED, EXIT_USER_ERROR, RunInterrupted, classify)

log = logging.getLogger("advaudit")

_FULL_ERRORS = False  # set by run_cli from HYDRA_FULL_ERROR / ADVAUDIT_DEBUG
_SIGNAL_EXIT = {"SIGINT": EXIT_INTERRUPTED, "SIGTERM": 128 + signal.SIGTERM}


def run_task(task: Callable[[DictConfig], dict[str, Any]], cfg: DictConfig, metric: str | None) -> float | None:
    """Run ``task`` inside ``@hydra.main``; returns ``result[metric]`` as a float for sweepers.

    A single run ends on a user error with its one-line message and exit code 2, and re-raises a
    bug (traceback, exit 1). In a multirun a failed job (its failure already recorded by the task
    wrapper) logs one line and returns ``None``, so the remaining jobs still run; an interrupt is
    re-raised and stops the sweep.
    """
    try:
        result = task(cfg)
    except Exception as error:
        kind, message = classify(error)
        if _is_multirun():
            if kind == "bug":
                log.error("job failed with a bug (recorded in %s/result.json):\n%s", _output_dir(cfg),
                          "".join(traceback.format_exception(error)))
            else:
                log.error("error: %s (recorded in %s/result.json)", message, _output_dir(cfg))
            return None
        if kind == "bug":
            raise
        _exit_user_error(message)
    value = result.get(metric) if metric else None
    return float(value) if isinstance(value, (int, float)) else None


def run_cli(hydra_main: Callable[[], Any]) -> None:
    """Call a ``@hydra.main`` function and map how it ended onto a message and an exit code."""
    global _FULL_ERRORS
    _FULL_ERRORS = _env_set("HYDRA_FULL_ERROR") or _env_set("ADVAUDIT_DEBUG")
    previous = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises: this boundary prints, once, as it decides
    _install_signal_handlers()
    try:
        _run_and_map(hydra_main)
    finally:
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = previous


def _run_and_map(hydra_main: Callable[[], Any]) -> None:
    try:
        hydra_main()
    except SystemExit as stop:
        interrupted = _interrupt_name(stop)
        if interrupted is None:
            raise
        _exit_interrupted(interrupted)
    except BaseException as error:
        interrupted = _interrupt_name(error)
        if interrupted is not None:
            _exit_interrupted(interrupted)
        kind, message = classify(error)
        if kind == "bug":
            raise  # Python prints the whole traceback; exit code 1
        _exit_user_error(message)


def _exit_user_error(message: str) -> None:
    """Print ``error: <message>`` (after the traceback when asked for) and exit 2."""
    if _FULL_ERRORS:
        traceback.print_exc()
    print(f"error: {message}", file=sys.stderr)
    sys.exit(EXIT_USER_ERROR)


def _exit_interrupted(name: str) -> None:
    print(f"interrupted by {name}: the records written so far are kept; rerun the same command into the "
          "same run dir (hydra.run.dir=<dir>) to resume", file=sys.stderr)
    sys.exit(_SIGNAL_EXIT.get(name, EXIT_INTERRUPTED))


def _interrupt_name(error: BaseException) -> str | None:
    return interruption(error)


def _install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise :class:`RunInterrupted` in the main thread (records are flushed
    as they are written, so stopping between any two statements loses nothing written)."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted(signal.Signals(signum).name)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)


def _is_multirun() -> bool:
    try:
        return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    except Exception:
        return False


def _output_dir(cfg: DictConfig) -> str:
    try:
        return str(Path(cfg.paths.output_dir))
    except Exception:
        return "the run dir"


def _env_set(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0", "false", "False")


__all__ = ["run_task", "run_cli", "EXIT_BUG", "EXIT_USER_ERROR", "EXIT_INTERRUPTED"]
