"""``python -m advaudit.demo [--train] [--seed N] [--out DIR]``: the demo (see :mod:`advaudit.demo`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from advaudit.demo import shipped
from advaudit.demo.findings import analyse_examination
from advaudit.demo.plan import TRAIN_EXPERIMENTS, DemoPlan
from advaudit.demo.steps import examination_status, run_step, shell_line, training_status
from advaudit.demo.summary import summary_lines, wrapped
from advaudit.errors import AdvauditError

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advaudit.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="examination seed, and training seed with --train (default 0; "
                        "a seed other than the shipped checkpoints' trains them)")
    parser.add_argument("--train", action="store_true", help="train the two checkpoints (about 5 minutes on 2 idle cores) "
                        "instead of using the ones shipped with advaudit")
    parser.add_argument("--out", default=None, help="output folder (default: outputs/demo/<time>)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, seconds long, for tests: its numbers mean nothing")
    parser.add_argument("--launcher", default="parallel", help="Hydra launcher of the multiruns (default: parallel)")
    parser.add_argument("--summary-of", default=None, metavar="DIR",
                        help="print the summary of a finished demo folder again (computed from its files), run nothing")
    args = parser.parse_args(argv)
    for key, value in (("OMP_NUM_THREADS", "1"), ("MKL_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"),
                       ("WANDB_MODE", "offline"), ("WANDB_SILENT", "true")):
        os.environ.setdefault(key, value)
    if args.summary_of:
        return _summary_of(Path(args.summary_of))
    root = Path(args.out) if args.out else ROOT / "outputs" / "demo" / time.strftime("%Y-%m-%d_%H-%M-%S")
    if root.exists() and any(root.iterdir()):
        print(f"error: {root} is not empty; pass --out with a new folder", file=sys.stderr)
        return 2
    try:
        use_shipped = not (args.train or args.quick) and args.seed == int(shipped.record()["seed"])
    except AdvauditError:
        use_shipped = False   # no shipped checkpoints in this install: train them
    plan = DemoPlan(root.resolve(), seed=args.seed, quick=args.quick, launcher=args.launcher, train=not use_shipped)
    start = time.perf_counter()
    print(f"advaudit demo (seed {plan.seed}): two checkpoints that differ in one way, audit both, compare.\n"
          f"Everything goes to {plan.root}", flush=True)
    timings = {}
    code = _checkpoints(plan, timings)
    if code != 0:
        return _failed("training", plan.root / "train.log", code)
    step = time.perf_counter()
    code = run_step("2. examine both with the RL and the BO examiner on the same instances; the multirun "
                    "compares them at its end (primary verdict, then where one is weaker, checked on held-out "
                    "instances)", plan.examine_args(), plan.root / "examine.log", ROOT,
                    lambda: examination_status(plan.examine_dir, 2 * len(TRAIN_EXPERIMENTS)))
    timings["examine_and_compare_s"] = time.perf_counter() - step
    if code != 0:
        return _failed("examination", plan.root / "examine.log", code)
    findings = analyse_examination(plan.train_dir, plan.examine_dir)
    print(f"\n   the comparison's report: {plan.comparison_dir / 'comparison.html'} "
          f"(to rerun it: {shell_line(plan.compare_args())})")
    lines = summary_lines(findings, plan.root, plan.wandb_group)
    minutes = (time.perf_counter() - start) / 60
    print(f"\n== Summary (seed {plan.seed}, {minutes:.1f} min)")
    print(wrapped(lines))
    (plan.root / "summary.txt").write_text("\n".join(lines) + "\n")
    (plan.root / "demo.json").write_text(json.dumps(
        {"seed": plan.seed, "minutes": minutes, "quick": plan.quick, "trained": plan.train,
         "step_seconds": timings, "weaker": findings.weaker,
         "found_planted": findings.found_planted,
         "summary": lines, "findings": asdict(findings)}, indent=2, default=str))
    return 0


def _summary_of(folder: Path) -> int:
    """``--summary-of DIR``: a finished demo's summary again, recomputed from its files."""
    done = DemoPlan(folder.resolve())
    if not (done.examine_dir / "comparison" / "comparison.json").exists():
        print(f"error: {done.root} holds no finished demo (no examine/comparison/comparison.json)", file=sys.stderr)
        return 2
    findings = analyse_examination(done.train_dir, done.examine_dir)
    print(wrapped(summary_lines(findings, done.root, done.wandb_group)))
    return 0


def _checkpoints(plan: DemoPlan, timings: dict[str, float]) -> int:
    """Step 1: train the two checkpoints, or copy the shipped ones into ``plan.train_dir``; an exit code."""
    names = [c.parent.parent.name for c in plan.checkpoints()]
    step = time.perf_counter()
    if plan.train:
        code = run_step("1. train two checkpoints in one multirun: a control, and one that never saw camera roll "
                        "beyond 240 degrees", plan.train_args(), plan.root / "train.log", ROOT,
                        lambda: training_status(plan.train_dir, names, plan.epochs))
        timings["train_s"] = time.perf_counter() - step
        return code
    record = shipped.record()
    shipped.install(plan.train_dir, names)
    print(f"\n== 1. two checkpoints shipped with advaudit (seed {record['seed']}; --train trains them again, "
          "about 5 minutes on 2 idle cores): a control, and one that never saw camera roll beyond 240 degrees")
    for name in names:
        entry = record["checkpoints"][name]
        print(f"   {name}: test accuracy {entry['test_acc']:.3f}, trained by `{entry['command']}`")
    print(f"   copied to {plan.train_dir}")
    timings["train_s"] = time.perf_counter() - step
    return 0


def _failed(step: str, log: Path, code: int) -> int:
    tail = log.read_text(errors="replace").splitlines()[-25:] if log.exists() else []
    print(f"\nerror: the {step} step failed (exit code {code}); the end of {log}:", file=sys.stderr)
    print("\n".join(tail), file=sys.stderr)
    return code if code in (1, 2) else 1


if __name__ == "__main__":
    sys.exit(main())
