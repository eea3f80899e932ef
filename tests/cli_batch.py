"""Run several command lines of the real CLIs (``train.py`` / ``examine.py``) in one process.

``python -m tests.cli_batch cases.json results.json``: each case ``{"script": "examine.py", "args":
[...]}`` is run as ``python <script> <args>`` would run it (the script executed as ``__main__``),
with its own stdout/stderr captured and its exit code recorded; an exception that escapes is
printed as Python would print it (exit code 1). One interpreter start-up (3-5 s of imports) then
serves many bad inputs, which keeps the bad-input suite fast.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
import time
import traceback
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra

REPO = Path(__file__).resolve().parents[1]


def run_case(script: str, args: list[str]) -> dict[str, object]:
    """Run ``script`` with ``args`` as ``__main__``; returns ``{"code", "stdout", "stderr", "seconds"}``."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    sys.argv = [str(REPO / script), *args]
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(str(REPO / script), run_name="__main__")
        except SystemExit as stop:
            code = stop.code if stop.code is not None else 0
        except BaseException:  # what the interpreter would print for an uncaught exception
            traceback.print_exc()
            code = 1
        finally:
            GlobalHydra.instance().clear()
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "seconds": round(time.perf_counter() - start, 3)}


def main(cases_path: str, results_path: str) -> None:
    cases = json.loads(Path(cases_path).read_text())
    results = {name: run_case(case["script"], case["args"]) for name, case in cases.items()}
    Path(results_path).write_text(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
