"""The demo's two checkpoints, shipped as package data so ``make demo`` need not train them.

``advaudit/demo/checkpoints/<name>.pt`` are ``target.pt`` files of ``train.py`` (loaded with
``weights_only=True`` like every checkpoint); ``trained.json`` records how each was trained: the
command, seed, training factor bounds, test accuracy, wall time and sha256. ``python -m advaudit.demo
--train`` (or any ``--seed`` but the shipped one) trains them again instead of using these.

To ship newly trained ones (from a finished ``python -m advaudit.demo --train --out DIR``)::

    python -m advaudit.demo.shipped DIR/train
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from advaudit.core.records import read_json
from advaudit.errors import AdvauditError, require

HERE = Path(__file__).with_name("checkpoints")
RECORD = HERE / "trained.json"


def record() -> dict[str, Any]:
    """``{"seed": S, "checkpoints": {name: {file, sha256, test_acc, factors, command, ...}}}``."""
    require(RECORD.exists(), f"{RECORD} is missing: this install has no shipped demo checkpoints; run "
            "`python -m advaudit.demo --train` to train them")
    return read_json(RECORD)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def install(train_dir: Path, names: list[str]) -> list[Path]:
    """Copy the shipped checkpoints ``names`` to ``train_dir/<name>/checkpoints/target.pt`` with their
    record as ``train_dir/<name>/trained.json`` (the layout a training multirun leaves); returns the paths."""
    shipped = record()
    out = []
    for name in names:
        entry = shipped["checkpoints"].get(name)
        require(entry is not None, f"no shipped demo checkpoint named {name} in {RECORD}; run "
                "`python -m advaudit.demo --train`")
        source = HERE / entry["file"]
        require(source.exists() and sha256(source) == entry["sha256"], f"{source} is missing or differs from the "
                f"sha256 in {RECORD}; reinstall advaudit or run `python -m advaudit.demo --train`")
        target = train_dir / name / "checkpoints" / "target.pt"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        (train_dir / name / "trained.json").write_text(json.dumps({**entry, "seed": shipped["seed"]}, indent=2) + "\n")
        out.append(target)
    return out


def _command(run_dir: Path) -> str:
    """``python train.py <overrides>`` of a training run (Hydra's ``.hydra/overrides.yaml``)."""
    overrides = run_dir / ".hydra" / "overrides.yaml"
    lines = overrides.read_text().splitlines() if overrides.exists() else []
    return "python train.py " + " ".join(line[2:].strip() for line in lines if line.startswith("- "))


def ship(train_dir: Path) -> dict[str, Any]:
    """Copy the checkpoints trained under ``train_dir`` (``<name>/result.json``, e.g. a ``--train`` demo's
    ``train/`` folder) and their record into the package; returns the record."""
    results = sorted(train_dir.glob("*/result.json"))
    require(len(results) >= 2, f"{train_dir} holds no finished training runs (<name>/result.json); train them "
            "first, e.g. `python -m advaudit.demo --train --out DIR`, then ship DIR/train")
    checkpoints, seeds = {}, set()
    HERE.mkdir(exist_ok=True)
    for result_path in results:
        result = read_json(result_path)
        require(result.get("status") == "ok", f"{result_path}: the training run did not finish")
        name, config = result_path.parent.name, result.get("config") or {}
        shutil.copyfile(Path(result["checkpoint"]), HERE / f"{name}.pt")
        seeds.add(config.get("seed"))
        checkpoints[name] = {
            "file": f"{name}.pt", "sha256": sha256(HERE / f"{name}.pt"), "test_acc": float(result["test/acc"]),
            "factors": (config.get("dataset") or {}).get("factors"),
            "epochs": (config.get("trainer") or {}).get("max_epochs"), "command": _command(result_path.parent),
            "train_seconds": result.get("duration_s") or result.get("seconds")}
    require(len(seeds) == 1, f"{train_dir}: the checkpoints were trained with different seeds {sorted(map(str, seeds))}")
    body = {"seed": seeds.pop(), "recipe": "conf/experiment/demo/train_control.yaml and train_roll_narrowed.yaml",
            "checkpoints": checkpoints}
    RECORD.write_text(json.dumps(body, indent=2) + "\n")
    return body


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m advaudit.demo.shipped TRAIN_DIR (e.g. the train/ folder of `python -m advaudit.demo --train`)",
              file=sys.stderr)
        return 2
    try:
        body = ship(Path(args[0]))
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"shipped {', '.join(body['checkpoints'])} (seed {body['seed']}) into {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
