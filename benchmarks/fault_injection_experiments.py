"""Injected global faults on Fashion-MNIST (the generative-fault-tests paper's RQ1, Table 2), with a
control target, the pixel baseline and an independent validity judge.

1. A class-conditional generator of pullovers and coats; targets with an injected fault (brightness:
   bright pullovers / dark coats only; size: large pullovers / small coats only), a control target
   trained without a fault, and a judge (MLP) trained on all real pullovers and coats.
2. Each fault verified on two held-out sets (biased like training / the opposite way).
3. Tests in both directions (pullover -> coat and coat -> pullover, ``--seeds`` each) against every
   target; for each kind of test (generator; pixel L2 and Linf PGD, advaudit engine) the share of
   failing tests that moved brightness and size the fault's way, and the share the judge still gives
   the seed's class.
Finished runs are skipped (rerun to resume). Writes ``<out>/table.md`` and ``<out>/table.json``.

    .venv/bin/python benchmarks/fault_injection_experiments.py [--out outputs/faults_injected] [--seeds 100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from error_search_replications import run  # noqa: E402

from advaudit.report.records import read_json, write_json  # noqa: E402

TARGETS = {"brightness": "faults/train_fmnist_brightness", "size": "faults/train_fmnist_size",
           "clean": "faults/train_fmnist_clean", "judge": "faults/train_fmnist_judge"}
THRESHOLDS = {"brightness": 0.40, "size": 0.59}  # the configs' splits (2-class training medians)
# the fault's direction: pullover -> coat tests should darken and shrink, coat -> pullover brighten and grow
DIRECTIONS = {"pullover_to_coat": ("pullover", "coat", -1), "coat_to_pullover": ("coat", "pullover", +1)}
FEATURES = ("brightness", "size")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("outputs/faults_injected"))
    parser.add_argument("--generator", type=Path, default=None, help="an existing pullover/coat generator.pt")
    parser.add_argument("--seeds", type=int, default=100, help="tests per direction (the paper: 100 + 100)")
    parser.add_argument("--generator-epochs", type=int, default=8)
    parser.add_argument("--audit", nargs="*", default=[], help="extra examine.py overrides")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    log = out / "log.txt"
    generator = args.generator or out / "generator" / "checkpoints" / "generator.pt"
    if not generator.exists():
        run("train.py", ["model=generator", "dataset=fashion_mnist", "dataset.classes=[pullover,coat]",
                         "dataset.batch_size=64", f"trainer.max_epochs={args.generator_epochs}", "callbacks=none"],
            out / "generator", log)
    checkpoints = {name: out / name / "checkpoints" / "target.pt" for name in TARGETS}

    def train(name: str) -> None:
        if not checkpoints[name].exists():
            run("train.py", [f"experiment={TARGETS[name]}", "callbacks=none"], out / name, log)

    train("judge")
    verification: dict = {"generator_gate": generator_gate(generator, checkpoints["judge"])}
    results = {}
    # the control right after the first fault: a feature share means nothing without it
    for name in ("brightness", "clean", "size"):
        train(name)
        if name in THRESHOLDS:
            text = subprocess.run([sys.executable, "benchmarks/verify_injected_fault.py", str(checkpoints[name]),
                                   "--attribute", name, "--threshold", str(THRESHOLDS[name]), "--high-class",
                                   "pullover"], check=True, capture_output=True, text=True).stdout
            verification[name] = json.loads(text)
        for direction, (source, destination, sign) in DIRECTIONS.items():
            run_dir = out / f"tests_{name}_{direction}"
            if not (run_dir / "fault_tests.json").exists():
                features = ",".join(f"{{kind:{f},direction:{sign}}}" for f in FEATURES)
                run("examine.py", ["audit=fault_tests", f"target={checkpoints[name].resolve()}",
                                   f"generator={generator.resolve()}", f"audit.source_class={source}",
                                   f"audit.target_class={destination}", f"audit.n_seeds={args.seeds}",
                                   f"audit.fault_feature=[{features}]", f"audit.judge={checkpoints['judge'].resolve()}",
                                   "audit.pixel_engine=advaudit",
                                   *args.audit], run_dir, log)
            results[f"{name}/{direction}"] = read_json(run_dir / "fault_tests.json")
        write_json(out / "table.json", {"verification": verification, "tests": results})  # partial results too
        (out / "table.md").write_text(table_markdown(verification, results), encoding="utf-8")
    write_json(out / "table.json", {"verification": verification, "tests": results})
    (out / "table.md").write_text(table_markdown(verification, results), encoding="utf-8")
    print((out / "table.md").read_text())


def generator_gate(generator_path: Path, judge_path: Path) -> float:
    """The generator's quality gate: share of its samples the judge (trained on real data) assigns to
    the conditioning class."""
    from advaudit.models import load_generator, load_target
    from advaudit.models.generator_training import class_agreement

    generator, _ = load_generator(str(generator_path))
    return class_agreement(generator.eval(), load_target(str(judge_path)))


def table_markdown(verification: dict, results: dict) -> str:
    """Held-out accuracies, then per target and direction the moved shares with intervals over tests."""

    def share(summary: dict, key: str) -> str:
        if summary.get(key) is None:
            return "-"
        return f"{summary[key]:.2f} [{summary[key + '/lo']:.2f}, {summary[key + '/hi']:.2f}] (n={summary[key + '/n']})"

    lines = [f"Generator gate: {verification['generator_gate']:.3f} of its samples get their class from the judge.", "",
             "| fault | held-out A (biased like training) acc | held-out B (opposite) acc |", "|---|---|---|"]
    for fault, report in verification.items():
        if fault == "generator_gate":
            continue
        lines.append(f"| {fault} | {report['A_like_training']['acc']:.3f} (n={report['A_like_training']['n']}) | "
                     f"{report['B_opposite']['acc']:.3f} (n={report['B_opposite']['n']}) |")
    lines += ["", "| target | direction | tests | success | valid (judge) | brightness moved fault's way | "
              "size moved fault's way | brightness, valid only | size, valid only |", "|---" * 9 + "|"]
    for run_name, summary in results.items():
        target, direction = run_name.split("/")
        for kind in ("generator", "pixel_l2", "pixel_linf"):
            if f"faults/{kind}/success" not in summary:
                continue
            cells = [f"{summary.get(f'faults/{kind}/success', 0):.2f}", share(summary, f"faults/{kind}/valid_share")]
            cells += [share(summary, f"faults/{kind}/feature/{f}/moved_share") for f in FEATURES]
            cells += [share(summary, f"faults/{kind}/feature/{f}_valid/moved_share") for f in FEATURES]
            lines.append(f"| {target} | {direction} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
