"""How many paired instances and seeds tell a planted-weakness target from its control, per headline.

Reads the worst-case runs under the given folders (advaudit.compare's grouping: one group per
examiner), takes each weakened/control pair as a paired pilot and prints, per examiner and headline,
the observed paired difference and test, the power at a grid of designs (n paired instances x k
seeds, resampled: advaudit.compare.power) and the instances needed for 80% power at each k.

    PYTHONPATH=. .venv/bin/python benchmarks/worst_case/planted_weakness_power.py outputs/pw --control train_control \
        [--n 10 20 50 100] [--k 1 3] [--replicates 1000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from advaudit.compare.design import group_runs
from advaudit.compare.differences import paired_difference, paired_frame
from advaudit.compare.metrics import metrics_for
from advaudit.compare.power import estimate_power, instances_needed, pilot_from_pairs
from advaudit.compare.records import discover_runs
from advaudit.core.intervals import format_interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--control", required=True, help="substring of the control target's path")
    parser.add_argument("--n", type=int, nargs="+", default=[10, 20, 50, 100])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for group in group_runs(discover_runs(args.roots)):
        if group.audit != "worst_case":
            continue
        controls = [t for t in group.targets if args.control in t]
        seeds = group.common_seeds()
        for control in controls:
            for weak in (t for t in group.targets if t != control):
                for metric in metrics_for(group.audit, group.runs):
                    if metric.column is None:
                        continue
                    observed = paired_difference(group, weak, control, metric, seeds)
                    pilot = pilot_from_pairs(paired_frame(group, weak, control, metric, seeds), metric.binary)
                    row = {"examiner": group.method, "weak": weak, "control": control, "metric": metric.key,
                           "seeds": seeds, "pilot_instances": pilot.n_instances,
                           "pilot_seeds_per_instance": pilot.seeds_per_instance,
                           "diff": observed["diff"], "lo": observed["lo"], "hi": observed["hi"],
                           "test": observed["test"], "p": observed["p"],
                           "power": {f"n={n},k={k}": estimate_power(pilot, n, k, replicates=args.replicates).power
                                     for n in args.n for k in args.k},
                           "n_for_80": {f"k={k}": instances_needed(pilot, k, replicates=args.replicates // 2)
                                        for k in args.k}}
                    rows.append(row)
                    print(f"{row['examiner']:6s} {weak.split('/')[-3]:>16s} {metric.key:22s} "
                          f"diff {format_interval(row['diff'], row['lo'], row['hi'], 3, sign=True)} {row['test']} "
                          f"p={row['p']:.3g} (pilot {pilot.n_instances} inst x {pilot.seeds_per_instance:.2f}) "
                          + " ".join(f"{k}:{v:.2f}" for k, v in row["power"].items())
                          + " n80 " + " ".join(f"{k}:{v}" for k, v in row["n_for_80"].items()), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
