"""``python -m advaudit.compare <run or multirun folders> [--out DIR] [--no-replay] [--wandb]``.

Reads every ``result.json`` under the folders, groups the runs that differ only in checkpoint
and seed, and writes comparison.md / .json, CSV tables and PNGs (see advaudit.compare.report).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advaudit.compare.report import compare_runs, verdict_metrics
from advaudit.core.wandb_run import log_comparison
from advaudit.errors import AdvauditError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advaudit.compare", description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", help="run folders, multirun folders or result.json files")
    parser.add_argument("--out", default=None, help="output folder (default: <first root>/comparison)")
    parser.add_argument("--no-replay", action="store_true", help="skip re-scoring worst conditions on other checkpoints")
    parser.add_argument("--wandb", action="store_true", help="also log tables and figures to W&B (mode: $WANDB_MODE, "
                        "offline by default)")
    args = parser.parse_args(argv)
    first = Path(args.roots[0])
    out = Path(args.out) if args.out else (first.parent if first.is_file() else first) / "comparison"
    try:
        summary = compare_runs(args.roots, out, replay=not args.no_replay)
        if args.wandb:
            log_comparison(summary, out)
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for group in summary["groups"]:
        print(f"\n{group['label']}:")
        for row in group["pairs"]:
            if row["metric"] in verdict_metrics(group):
                print(f"  {row['verdict']}")
    for failure in summary["failed"]:
        print(f"failed: {failure['run_dir']}: {failure['error']}")
    print(f"\nreport: {summary['files']['md']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
