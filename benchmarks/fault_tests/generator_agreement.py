"""Class agreement of a generator while it trains: its last finished epoch, judged by several classifiers.

The gate (``model.quality_gate``) is measured once, at the end of training, by one classifier. This
reads a generator run dir's epoch checkpoint (``checkpoints/resume.ckpt``), rebuilds the generator from
the run's own config (``run_config.json``) and measures the gate's statistic (the share of 100 samples
per class a classifier gives their class, :func:`advaudit.models.generators.generator_training.class_agreement_by_class`,
the same samples as the gate) by every ``--classifier``, so a generator that learns features only one
network reads (a class teacher's) shows as a gap between classifiers. Appends one JSON line per call
to ``<run dir>/agreement.jsonl``.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fault_tests/generator_agreement.py outputs/faults_shapes/generator \\
        --classifier gate=<gate classifier.pt> --classifier judge=<another classifier.pt>
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from advaudit.core.records import append_jsonl, read_json  # noqa: E402
from advaudit.models import load_target  # noqa: E402
from advaudit.models.generators.generator import ConditionalGenerator, architecture  # noqa: E402
from advaudit.models.generators.generator_training import class_agreement_by_class  # noqa: E402


def generator_of_run(run_dir: Path, image_shape: list[int]) -> tuple[ConditionalGenerator, dict]:
    """The generator of ``run_dir``'s last finished epoch (eval mode) and ``{epoch, steps}``."""
    model = read_json(run_dir / "run_config.json")["model"]
    checkpoint = torch.load(run_dir / "checkpoints" / "resume.ckpt", map_location="cpu", weights_only=True)
    state = {k.removeprefix("generator."): v for k, v in checkpoint["state_dict"].items() if k.startswith("generator.")}
    generator = ConditionalGenerator(len(state["embed.weight"]), image_shape, **architecture(model))
    generator.load_state_dict(state)
    return generator.eval(), {"epochs_done": int(checkpoint["epoch"]) + 1, "batches": int(checkpoint["global_step"])
                              // (2 if model.get("objective", "adversarial") == "adversarial" else 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--classifier", action="append", required=True, metavar="NAME=PATH",
                        help="a classifier of the generator's classes, trained on real images (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    classifiers = {name: load_target(path) for name, path in (spec.split("=", 1) for spec in args.classifier)}
    first = next(iter(classifiers.values()))
    generator, progress = generator_of_run(args.run_dir, list(first.input_shape))
    record = {"time": time.strftime("%H:%M:%S"), **progress}
    for name, classifier in classifiers.items():
        by_class = class_agreement_by_class(generator, classifier)
        record[name] = round(float(by_class.mean()), 3)
        record[f"{name}_by_class"] = dict(zip(classifier.class_names, [round(v, 2) for v in by_class.tolist()]))
    append_jsonl(args.run_dir / "agreement.jsonl", record)
    print(record)


if __name__ == "__main__":
    main()
