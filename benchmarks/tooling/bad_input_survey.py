"""Survey: every bad input of the test suite through the real CLIs, counted by how it ends.

    .venv/bin/python benchmarks/tooling/bad_input_survey.py --target <a Fashion-MNIST target.pt> [--repo <checkout>]

For each case of ``tests/test_bad_input.py`` (a command line a user could type): the exit code,
whether a traceback was printed, how many ``error:`` lines, whether the message names the key or
file, whether a ``result.json`` claims success, and the seconds until the process gave up (the cases
run in one interpreter, ``tests/cli_batch.py``, so start-up is not counted). ``--repo`` runs the
same cases against another checkout (e.g. ``git archive main | tar -x -C /tmp/main``, with
``tests/cli_batch.py`` copied in) for a before/after comparison. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.test_bad_input import QUIET, cases, make_bad_files  # noqa: E402


def classify_outcome(result: dict, expected: str, run_dir: Path) -> str:
    """``clean`` (exit 2, one named line, no traceback), ``traceback``, ``accepted`` or ``unnamed``."""
    output = result["stdout"] + result["stderr"]
    record = run_dir / "result.json"
    succeeded = record.exists() and json.loads(record.read_text()).get("status", "ok") == "ok"
    if result["code"] == 0 or succeeded:
        return "accepted"
    if "Traceback" in output:
        return "traceback"
    errors = [line for line in result["stderr"].splitlines() if line.startswith("error: ")]
    if result["code"] == 2 and len(errors) == 1 and expected in errors[0]:
        return "clean"
    return "unnamed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bad_input_survey_"))
    (root / "files").mkdir()
    files = make_bad_files(root / "files", args.target.resolve())
    table = cases(files)
    batch = {name: {"script": script, "args": [*QUIET, *argv, f"hydra.run.dir={root / 'runs' / name}"]}
             for name, (script, argv, _) in table.items()}
    (root / "cases.json").write_text(json.dumps(batch))
    env = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1",
           "HYDRA_FULL_ERROR": ""}
    subprocess.run([sys.executable, "-m", "tests.cli_batch", str(root / "cases.json"), str(root / "out.json")],
                   cwd=args.repo, env=env, check=True)
    results = json.loads((root / "out.json").read_text())
    outcomes = {name: classify_outcome(results[name], table[name][2], root / "runs" / name) for name in table}
    print(f"repo: {args.repo}\n\n| case | exit | outcome | seconds |\n|---|---|---|---|")
    for name in table:
        print(f"| {name} | {results[name]['code']} | {outcomes[name]} | {results[name]['seconds']:.2f} |")
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(Counter(outcomes.values()).items())) +
          f" (of {len(table)})")


if __name__ == "__main__":
    main()
