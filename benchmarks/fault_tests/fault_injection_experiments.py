"""Injected global faults on Fashion-MNIST (the generative-fault-tests paper's RQ1, Table 2, and RQ3),
with a control target, the pixel baseline, an independent validity judge, and intervals over
independently retrained targets.

1. One class-conditional generator of pullovers and coats, one judge (MLP) trained on all real
   pullovers and coats, one PGD-trained target (RQ3). For every training seed: a brightness-fault
   target (bright pullovers / dark coats only), a size-fault target (large pullovers / small coats
   only) and a control target trained without a fault.
2. Each fault target verified on two held-out sets (biased like training / the opposite way).
3. Per target, tests in both directions in one batched walk (``audit.both_directions``:
   pullover -> coat and coat -> pullover, ``--seeds`` generator seeds each), and the pixel baseline
   (L2 and Linf PGD, advaudit engine) from the same seeds; the share of failing tests that moved
   brightness and size the fault's way, and the share the judge still gives the seed's class.
   RQ3: the tests' accuracy on the PGD-trained target, valid tests only.
4. Per fault, direction and kind of test: the mean over training seeds of each per-target share, with
   a 95% bootstrap interval over the seeds (independent replications: each seed retrains the target
   and draws its own generator seeds; with two seeds the "interval" is just their range), and the
   failing tests pooled over seeds.
Finished runs are skipped (rerun to resume). Writes ``<out>/table.md`` and ``<out>/table.json``.

    .venv/bin/python benchmarks/fault_tests/fault_injection_experiments.py [--out outputs/faults_injected] \
        [--train-seeds 42 1 2 3 4] [--seeds 60] [--generator G.pt]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "error_search"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from error_search_replications import run  # noqa: E402

from advaudit.core.records import read_json, write_json  # noqa: E402
from advaudit.core.intervals import format_interval, format_summary, mean_with_ci  # noqa: E402
from advaudit.faults.statistics import KINDS, detection_over_control  # noqa: E402

FAULTS = {"brightness": "faults/train_fmnist_brightness", "size": "faults/train_fmnist_size",
          "clean": "faults/train_fmnist_clean"}
SHARED = {"judge": ["experiment=faults/train_fmnist_judge"],
          "robust": ["experiment=faults/train_fmnist_robust", "dataset.classes=[pullover,coat]"]}
THRESHOLDS = {"brightness": 0.40, "size": 0.59}  # the configs' splits (2-class training medians)
FEATURES = ("brightness", "size")
# forward direction pullover -> coat: the fault's way is darker and smaller (reverse: brighter, larger)
DIRECTIONS = {"pullover_to_coat": "", "coat_to_pullover": "reverse/"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("outputs/faults_injected"))
    parser.add_argument("--generator", type=Path, default=None, help="an existing pullover/coat generator.pt")
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[42, 1, 2, 3, 4])
    parser.add_argument("--seeds", type=int, default=60, help="generator seeds per direction and target")
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

    def trained(name: str, overrides: list[str]) -> Path:
        checkpoint = out / name / "checkpoints" / "target.pt"
        if not checkpoint.exists():
            run("train.py", [*overrides, "callbacks=none"], out / name, log)
        return checkpoint.resolve()

    shared = {name: trained(name, overrides) for name, overrides in SHARED.items()}
    verification: dict[str, Any] = {"generator_gate": generator_gate(generator, shared["judge"])}
    per_seed: dict[str, dict[str, Any]] = {}
    for seed in args.train_seeds:
        for fault, experiment in FAULTS.items():
            name = f"{fault}_seed{seed}"
            target = trained(name, [f"experiment={experiment}", f"seed={seed}"])
            if fault in THRESHOLDS:
                verification[name] = verify(target, fault)
            run_dir = out / f"tests_{name}"
            if not (run_dir / "fault_tests.json").exists():
                features = ",".join(f"{{kind:{f},direction:-1}}" for f in FEATURES)
                run("examine.py", ["audit=fault_tests", f"target={target}", f"generator={generator.resolve()}",
                                   "audit.source_class=pullover", "audit.target_class=coat",
                                   "audit.both_directions=true", f"audit.n_seeds={args.seeds}", f"seed={seed}",
                                   f"audit.fault_feature=[{features}]", f"audit.judge={shared['judge']}",
                                   f"audit.transfer_targets=[{shared['robust']}]", "audit.pixel_engine=advaudit",
                                   *args.audit], run_dir, log)
            per_seed[name] = read_json(run_dir / "fault_tests.json")
        table = aggregate(per_seed, args.train_seeds)
        detection = detection_over_control(per_seed, args.train_seeds, THRESHOLDS, DIRECTIONS)
        write_json(out / "table.json", {"verification": verification, "per_seed": per_seed, "table": table,
                                        "detection_over_control": detection})
        (out / "table.md").write_text(table_markdown(verification, table) + detection_markdown(detection),
                                      encoding="utf-8")
    print((out / "table.md").read_text())


def verify(target: Path, fault: str) -> dict[str, Any]:
    """Held-out accuracies of a fault target (set A biased like training, set B the opposite way),
    saved beside the target's run (``verification.json``) and read from there on a rerun."""
    saved = target.parent.parent / "verification.json"
    if saved.exists():
        return read_json(saved)
    text = subprocess.run([sys.executable, "benchmarks/fault_tests/verify_injected_fault.py", str(target), "--attribute", fault,
                           "--threshold", str(THRESHOLDS[fault]), "--high-class", "pullover"],
                          check=True, capture_output=True, text=True).stdout
    report = json.loads(text)
    write_json(saved, report)
    return report


def generator_gate(generator_path: Path, judge_path: Path) -> float:
    """The generator's quality gate: share of its samples the judge (trained on real data) assigns to
    the conditioning class."""
    from advaudit.models import load_target
    from advaudit.models.generators.generator import load_generator
    from advaudit.models.generators.generator_training import class_agreement

    generator, _ = load_generator(str(generator_path))
    return class_agreement(generator.eval(), load_target(str(judge_path)))


def aggregate(per_seed: dict[str, dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """Per fault, direction and kind: each statistic's mean over training seeds with its interval, and
    the failing (and valid failing) tests pooled over seeds."""
    statistics = {"success": "success", "valid_share": "valid_share", "rq3_robust_acc": None,
                  **{f"{f}_moved": f"feature/{f}/moved_share" for f in FEATURES},
                  **{f"{f}_moved_valid": f"feature/{f}_valid/moved_share" for f in FEATURES}}
    table: dict[str, Any] = {}
    for fault in FAULTS:
        runs = [per_seed[f"{fault}_seed{s}"] for s in seeds if f"{fault}_seed{s}" in per_seed]
        if not runs:
            continue
        for direction, prefix in DIRECTIONS.items():
            for kind in KINDS:
                key = f"faults/{prefix}{kind}"
                if f"{key}/success" not in runs[0]:
                    continue
                row: dict[str, Any] = {"seeds": len(runs), "seeds_per_run": runs[0]["faults/n_seeds"]}
                for name, suffix in statistics.items():
                    # RQ3 (suffix None): accuracy of the PGD-trained target on the valid failing tests
                    values = [r.get(f"{key}/{suffix or 'transfer_acc/robust'}") for r in runs]
                    row[name] = mean_with_ci([float("nan") if v is None else v for v in values])
                row["failing_pooled"] = sum(round(r[f"{key}/success"] * r["faults/n_seeds"]) for r in runs)
                row["valid_pooled"] = sum(r.get(f"{key}/feature/brightness_valid/moved_share/n") or 0 for r in runs)
                table[f"{fault}/{direction}/{kind}"] = row
        for direction, prefix in DIRECTIONS.items():  # the robust target on the unperturbed seeds
            values = [r.get(f"faults/{prefix}seeds/transfer_acc/robust") for r in runs]
            table[f"{fault}/{direction}/seeds"] = {"rq3_robust_acc": mean_with_ci(
                [float("nan") if v is None else v for v in values]), "seeds": len(runs)}
    return table


def detection_markdown(detection: dict[str, Any]) -> str:
    """The fault-minus-control table (see :func:`advaudit.faults.statistics.detection_over_control`)."""
    lines = ["", "Share of failing tests that moved the fault's feature the fault's way, pooled over the tests of "
             "all seeds [95% interval resampling the training seeds]:", "",
             "| fault | direction | tests | fault target (failing tests) | control target (failing tests) | "
             "difference | mean of per-seed differences |", "|---|---|---|---|---|---|---|"]

    def cell(stats: dict[str, float] | None) -> str:
        return format_summary(stats, centre="share")

    for name, row in detection.items():
        paired = row["paired"]
        lines.append(f"| {' | '.join(name.split('/'))} | {cell(row['fault'])} ({row['failing']['fault']}) | "
                     f"{cell(row['control'])} ({row['failing']['control']}) | {cell(row['difference'])} | "
                     f"{format_interval(paired['mean'], paired['lo'], paired['hi'])} (n={paired['n']}) |")
    return "\n".join(lines) + "\n"


def table_markdown(verification: dict[str, Any], table: dict[str, Any]) -> str:
    """Held-out accuracies, then per fault / direction / kind the shares with intervals over seeds."""

    def cell(stats: dict[str, float] | None, digits: int = 2) -> str:
        return format_summary(stats, digits)

    lines = [f"Generator gate: {verification['generator_gate']:.3f} of its samples get their class from the judge.", "",
             "| fault target | held-out A (biased like training) acc | held-out B (opposite) acc |", "|---|---|---|"]
    for name, report in verification.items():
        if name != "generator_gate":
            lines.append(f"| {name} | {report['A_like_training']['acc']:.3f} (n={report['A_like_training']['n']}) | "
                         f"{report['B_opposite']['acc']:.3f} (n={report['B_opposite']['n']}) |")
    header = ["success", "valid (judge)", "brightness moved", "size moved", "brightness moved, valid",
              "size moved, valid", "robust target acc (valid tests)", "failing / valid tests pooled"]
    lines += ["", "| target | direction | tests | " + " | ".join(header) + " |", "|---" * (len(header) + 3) + "|"]
    for name, row in table.items():
        fault, direction, kind = name.split("/")
        if kind == "seeds":
            cells = ["-"] * 6 + [cell(row["rq3_robust_acc"], 3), "-"]
        else:
            cells = [cell(row[k]) for k in ("success", "valid_share", "brightness_moved", "size_moved",
                                            "brightness_moved_valid", "size_moved_valid")]
            cells += [cell(row["rq3_robust_acc"], 3), f"{row['failing_pooled']} / {row['valid_pooled']}"]
        lines.append(f"| {fault} | {direction} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
