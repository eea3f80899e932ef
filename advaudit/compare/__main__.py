"""``python -m advaudit.compare <run or multirun folders> [--out DIR] [--primary METRIC] [--gate BASELINE [--margin M]]
[--recipe NAME=PATTERN ...] [--factor-group NAME=F1,F2 ...]``.

Reads every ``result.json`` under the folders, groups the runs that differ only in checkpoint
and seed, and writes comparison.md / .html / .json, CSV tables and PNGs (see advaudit.compare.report).
Prints each group's primary verdicts first. With ``--gate BASELINE`` it also writes ``gate.xml``
(JUnit) beside the report and exits 1 when a candidate is weaker than the baseline on the primary
question beyond ``--margin`` (advaudit.compare.gate); 2 on bad input, else 0.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from advaudit.compare.design import group_runs
from advaudit.compare.gate import GATE_FILE, gate, require_known_baseline, run_gate
from advaudit.compare.labels import parse_recipes
from advaudit.compare.records import discover_runs
from advaudit.compare.render.wandb import log_comparison
from advaudit.compare.report import compare_records
from advaudit.compare.where.confirm import Settings
from advaudit.errors import AdvauditError
from advaudit.models.targets.tracking import declare_comparison_inputs
from advaudit.runtime import MEMORY_CHOICES, configure_memory


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m advaudit.compare", description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", help="run folders, multirun folders or result.json files")
    parser.add_argument("--out", default=None, help="output folder (default: <first root>/comparison)")
    parser.add_argument("--no-replay", action="store_true", help="skip re-scoring worst conditions on other checkpoints")
    parser.add_argument("--primary", default=None, help="the metric every group answers on (default: the one each "
                        "audit declared: audit.metric, or compare.primary when the runs set it)")
    parser.add_argument("--gate", default=None, metavar="BASELINE", help="exit 1 when a checkpoint is weaker than "
                        "BASELINE (a checkpoint name as the report gives it) on the primary question; writes gate.xml")
    parser.add_argument("--baseline", default=None, metavar="NAME", help="compare every other checkpoint with this "
                        "one (as the report names it): K checkpoints, K - 1 pairs; --gate BASELINE implies it. Default: "
                        "every pair up to 3 checkpoints, else against the first by name")
    parser.add_argument("--all-pairs", action="store_true", help="compare every pair of checkpoints (K (K - 1) / 2 "
                        "pairs in one Holm family: less power per pair)")
    parser.add_argument("--margin", type=float, default=0.0, help="with --gate: the loss on the primary metric, in "
                        "its own units, that still passes (default 0)")
    parser.add_argument("--where-instances", type=int, default=Settings.instances, help="held-out instances the "
                        "checks of where one checkpoint is weaker render (default %(default)s; more: more power)")
    parser.add_argument("--where-conditions", type=int, default=Settings.random_conditions, help="random conditions "
                        "per held-out instance for the per-factor sensitivity (default %(default)s)")
    parser.add_argument("--where-min-points", type=float, default=Settings.min_points, help="the smallest "
                        "difference, in accuracy points, the per-factor sensitivity reports (its 95%% interval must "
                        "lie beyond it; default %(default)s; 0: any difference that is significant)")
    parser.add_argument("--why-instances", type=int, default=Settings.why_instances, help="held-out instances the "
                        "why section renders (at most; default %(default)s; recipes confirm on as many others)")
    parser.add_argument("--why-renders", type=int, default=Settings.why_renders, help="renders per intervention of "
                        "the why section, instances x conditions (default %(default)s; more: more power)")
    parser.add_argument("--why-min-points", type=float, default=Settings.why_min_points, help="the smallest part of "
                        "a gap, in accuracy points, the why section names (default %(default)s)")
    parser.add_argument("--factor-group", action="append", default=[], metavar="NAME=F1,F2", help="a group of factors "
                        "of your own the why section sets to their reference together (repeat per group), e.g. "
                        "--factor-group light=brightness,gamma")
    parser.add_argument("--recipe", action="append", default=[], metavar="NAME=PATTERN", help="label every run whose "
                        "checkpoint path matches the shell PATTERN as NAME (repeat per recipe): runs of unnamed "
                        "checkpoints, one per seed, are then compared as recipes over their seeds")
    parser.add_argument("--wandb", action="store_true", help="also log to W&B (mode: $WANDB_MODE, offline by "
                        "default): tables, figures, the audited checkpoints and audit runs as inputs, the report as "
                        "an output artifact; inside an active W&B run (from Python) into that run")
    parser.add_argument("--gate-alias", default=None, metavar="ALIAS", help="with --gate and --wandb: give every "
                        "candidate that passes the gate this alias on its W&B artifact (e.g. deploy-ok)")
    parser.add_argument("--memory", choices=MEMORY_CHOICES, default="keep", help="memory the renders and predictions "
                        "free: keep it for the next batch (no page faults; the process holds its peak) or release it "
                        "(glibc's default); results are the same")
    return parser.parse_args(argv)


def parse_factor_groups(specs: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``["light=brightness,gamma"]`` -> ``(("light", ("brightness", "gamma")),)``; a bad spec raises AdvauditError."""
    groups = []
    for spec in specs:
        name, sep, members = spec.partition("=")
        factors = tuple(f.strip() for f in members.split(",") if f.strip())
        if not (sep and name.strip() and len(factors) >= 2):
            raise AdvauditError(f"--factor-group {spec!r} is not NAME=F1,F2 with two or more factors; e.g. "
                                "--factor-group light=brightness,gamma")
        groups.append((name.strip(), factors))
    return tuple(groups)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    configure_memory(args.memory)
    first = Path(args.roots[0])
    out = Path(args.out) if args.out else (first.parent if first.is_file() else first) / "comparison"
    try:
        if min(args.where_instances, args.where_conditions) < 1:
            raise AdvauditError("--where-instances and --where-conditions must be >= 1")
        if not 0 <= args.where_min_points < 100:
            raise AdvauditError(f"--where-min-points {args.where_min_points:g} is not in [0, 100): give the "
                                "smallest accuracy difference worth reporting, in points (e.g. 3)")
        if min(args.why_instances, args.why_renders) < 1 or not 0 <= args.why_min_points < 100:
            raise AdvauditError("--why-instances and --why-renders must be >= 1 and --why-min-points in [0, 100)")
        where = Settings(instances=args.where_instances, random_conditions=args.where_conditions,
                         min_points=args.where_min_points, why_instances=args.why_instances,
                         why_renders=args.why_renders, why_min_points=args.why_min_points,
                         factor_groups=parse_factor_groups(args.factor_group))
        if args.gate_alias is not None and not (args.gate and args.wandb):
            raise AdvauditError("--gate-alias tags the W&B artifact of each candidate that passes: give it with "
                                "--gate BASELINE and --wandb")
        records = discover_runs(args.roots, parse_recipes(args.recipe))
        for name, flag in ((args.gate, "--gate"), (args.baseline, "--baseline")):
            if name is not None:  # a name the comparison will not know is refused before it runs
                require_known_baseline([g.targets for g in group_runs(records)], name, flag)
        (out / GATE_FILE).unlink(missing_ok=True)  # a gate.xml beside the new report is this run's, or none
        summary = compare_records(records, out, replay=not args.no_replay, primary=args.primary, where=where,
                                  baseline=args.baseline or args.gate, all_pairs=args.all_pairs)
        cases = gate(summary, args.gate, args.margin) if args.gate is not None else None
        for group in summary["groups"]:
            print(f"\n{group['label']}" + (f", on {group['primary']}:" if group.get("primary") else ":"))
            for answer in group.get("answers", []):
                print(f"  {answer['text']}")
                if answer.get("why"):
                    print(f"    why: {answer['why']}")
                for evidence in answer["secondary"]:
                    print(f"    {evidence['relation']}: {evidence['text']}")
        for failure in summary["failed"]:
            print(f"failed: {failure['run_dir']}: {failure['error']}")
        print(f"\nreport: {summary['files']['md']} ({Path(summary['files']['html']).name} beside it)")
        code = run_gate(summary, out, args.gate, args.margin, cases) if cases is not None else 0
        if args.wandb:  # after the gate: its gate.xml goes into the report artifact, its passes become aliases
            passed = {c["candidate_target"]: [args.gate_alias] for c in cases or [] if args.gate_alias and not c["failed"]}
            log_comparison(summary, out, declare_inputs=partial(declare_comparison_inputs, records=records,
                                                                aliases=passed))
        return code
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
