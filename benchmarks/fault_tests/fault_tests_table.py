"""One markdown table from several fault-test audits (``examine.py audit=fault_tests``): per group of
run dirs (independent replications: audit seeds or retrained targets), each direction and kind of test,
the mean and 95% bootstrap interval over the runs of success, the judge's valid share, failing tests
per second, and the failing tests pooled.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fault_tests/fault_tests_table.py \\
        resnet=outputs/faults_shapes/audits_can_barrel/resnet_s0,outputs/faults_shapes/audits_can_barrel/resnet_s1 ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from advaudit.core.records import read_json  # noqa: E402
from advaudit.core.intervals import format_summary, mean_with_ci  # noqa: E402

KINDS = ("generator", "pixel_l2", "pixel_linf")
STATISTICS = ("success", "valid_share", "tests_per_second")


def _cell(values: list[float]) -> str:
    return format_summary(mean_with_ci(values), missing="nan [nan, nan]")


def rows(name: str, runs: list[dict]) -> list[str]:
    """The table rows of one group of finished audits (``fault_tests.json`` records)."""
    out = []
    first = runs[0]
    for prefix, direction in (("", f"{first['faults/source']} → {first['faults/target']}"),
                              ("reverse/", f"{first['faults/target']} → {first['faults/source']}")):
        if f"faults/{prefix}generator/success" not in first:
            continue
        seeds = [r[f"faults/{prefix}seeds/valid_share"] for r in runs]
        for kind in KINDS:
            key = f"faults/{prefix}{kind}/"
            cells = [_cell([r[key + s] for r in runs]) for s in STATISTICS]
            failing = sum(round(r[key + "success"] * r["faults/n_seeds"]) for r in runs)
            out.append(f"| {name} | {direction} | {kind} | {' | '.join(cells)} | {failing} | {_cell(seeds)} | {len(runs)} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="+", metavar="NAME=DIR,DIR,...")
    args = parser.parse_args()
    print("| target | direction | tests | success | valid (judge) | failing tests/s | failing tests pooled "
          "| judge on the seeds | runs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for group in args.groups:
        name, dirs = group.split("=", 1)
        print("\n".join(rows(name, [read_json(Path(d) / "fault_tests.json") for d in dirs.split(",")])))


if __name__ == "__main__":
    main()
