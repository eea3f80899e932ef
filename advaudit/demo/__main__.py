"""``python -m advaudit.demo [--seed N] [--out DIR]``: the demo (see :mod:`advaudit.demo`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from advaudit.demo.findings import add_check, analyse_examination
from advaudit.demo.plan import TRAIN_EXPERIMENTS, DemoPlan
from advaudit.demo.steps import examination_status, run_step, shell_line, training_status
from advaudit.demo.summary import summary_lines, wrapped

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advaudit.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="training and examination seed (default 0)")
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
        done = DemoPlan(Path(args.summary_of).resolve())
        if not (done.examine_dir / "comparison" / "comparison.json").exists():
            print(f"error: {done.root} holds no finished demo (no examine/comparison/comparison.json)", file=sys.stderr)
            return 2
        findings = analyse_examination(done.train_dir, done.examine_dir)
        if (done.confirm_dir / "comparison" / "comparison.json").exists():
            add_check(findings, done.confirm_dir)
        print(wrapped(summary_lines(findings, done.root, done.wandb_group)))
        return 0
    root = Path(args.out) if args.out else ROOT / "outputs" / "demo" / time.strftime("%Y-%m-%d_%H-%M-%S")
    if root.exists() and any(root.iterdir()):
        print(f"error: {root} is not empty; pass --out with a new folder", file=sys.stderr)
        return 2
    plan = DemoPlan(root.resolve(), seed=args.seed, quick=args.quick, launcher=args.launcher)
    start = time.perf_counter()
    print(f"advaudit demo (seed {plan.seed}): train two checkpoints that differ in one way, audit both, compare.\n"
          f"Everything goes to {plan.root}", flush=True)
    names = [c.parent.parent.name for c in plan.checkpoints()]
    epochs = plan.epochs
    code = run_step("1. train two checkpoints in one multirun: a control, and one that never saw camera roll "
                    "beyond 300 degrees", plan.train_args(), plan.root / "train.log", ROOT,
                    lambda: training_status(plan.train_dir, names, epochs))
    if code != 0:
        return _failed("training", plan.root / "train.log", code)
    code = run_step("2. examine both with the RL and the BO examiner on the same instances; the multirun "
                    "compares them at its end", plan.examine_args(), plan.root / "examine.log", ROOT,
                    lambda: examination_status(plan.examine_dir, 2 * len(TRAIN_EXPERIMENTS)))
    if code != 0:
        return _failed("examination", plan.root / "examine.log", code)
    findings = analyse_examination(plan.train_dir, plan.examine_dir)
    print(f"\n   what the comparison says (to rerun it: {shell_line(plan.compare_args())})")
    for verdict in findings.severity:
        print(f"   {verdict.examiner.upper()}: {verdict.words} "
              + ", ".join(f"{k} {v:.3f}" for k, v in verdict.means.items())
              + f"; {verdict.test} p = {verdict.p_holm:.2g} over {verdict.n_instances} paired instances")
    where = findings.where
    if where is not None:
        print(f"   worst cases lie most differently in {where.factor} (two-sample {where.test} p = {where.p:.2g}): "
              f"{100 * where.share_suspect:.0f}% of {where.suspect}'s in {where.region[0]:g}-{where.region[1]:g}, "
              f"{100 * where.share_other:.0f}% of the other's")
    if where is not None:  # checked whatever step 2's p: the check tests on new instances and conditions
        code = run_step(f"3. check it: both checkpoints on held-out test instances under new random conditions "
                        f"with {where.factor} in {where.region[0]:g}-{where.region[1]:g}",
                        plan.confirm_args(where.factor, *where.region), plan.root / "check.log", ROOT,
                        lambda: examination_status(plan.confirm_dir, len(TRAIN_EXPERIMENTS)))
        if code != 0:
            return _failed("check", plan.root / "check.log", code)
        add_check(findings, plan.confirm_dir)
    lines = summary_lines(findings, plan.root, plan.wandb_group)
    minutes = (time.perf_counter() - start) / 60
    print(f"\n== Summary (seed {plan.seed}, {minutes:.1f} min)")
    print(wrapped(lines))
    (plan.root / "summary.txt").write_text("\n".join(lines) + "\n")
    (plan.root / "demo.json").write_text(json.dumps(
        {"seed": plan.seed, "minutes": minutes, "quick": plan.quick, "weaker": findings.weaker,
         "found_planted": findings.found_planted,
         "summary": lines, "findings": asdict(findings)}, indent=2, default=str))
    return 0


def _failed(step: str, log: Path, code: int) -> int:
    tail = log.read_text(errors="replace").splitlines()[-25:] if log.exists() else []
    print(f"\nerror: the {step} step failed (exit code {code}); the end of {log}:", file=sys.stderr)
    print("\n".join(tail), file=sys.stderr)
    return code if code in (1, 2) else 1


if __name__ == "__main__":
    sys.exit(main())
