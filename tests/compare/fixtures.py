"""Result records written the way the audits write them (worst-case: the `/`-named result contract)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from advaudit.core.records import write_json

WORLD = {"_target_": "advaudit.worlds.shapes.ShapeWorld", "image_size": 16,
         "instances_per_class": {"train": 2, "val": 2, "test": 2}, "seed": 0, "factors": None, "classes": None,
         "shadows": True, "device": "cpu"}
AUDIT = {"name": "worst_case", "run": "advaudit.audits.worst_case.run", "budget": 64, "budget_unit": "queries",
         "selection": "random", "selection_split": "val", "n_instances": 20, "fixed_random": [], "calibrated": False,
         "checkpoint_every": 10, "metric": "examine/E_T"}
CLASSES = ["mug", "chair", "lamp", "table"]


def worst_case_config(target: str, seed: int, examiner: str = "random", **audit: Any) -> dict[str, Any]:
    return {"task_name": "examine", "target": target, "seed": seed, "world": WORLD,
            "examiner": {"name": examiner, "q": 8}, "audit": {**AUDIT, **audit},
            "paths": {"output_dir": "/somewhere"}, "threads": 1}


def write_worst_case(run_dir: Path, target: str, seed: int, worst: np.ndarray, failed: np.ndarray,
                     worst_s: list[dict[str, float]] | None = None, instances: list[int] | None = None,
                     examiner: str = "random", **audit: Any) -> Path:
    """A worst-case result.json with ``per_instance`` rows (E_T = worst + 0.1) and headline keys."""
    n = len(worst)
    instances = instances if instances is not None else list(range(n))
    rows = [{"instance": int(instances[i]), "label": i % len(CLASSES), "class": CLASSES[i % len(CLASSES)],
             "E_T": float(min(1.0, worst[i] + 0.1)), "worst": float(worst[i]), "failed": bool(failed[i]),
             "invalid_share": 0.0, "worst_s": (worst_s[i] if worst_s else {})} for i in range(n)]
    result = {"status": "ok", "task": "examine", "audit": "worst_case", "target": target, "primary": "examine/E_T",
              "examine/worst": float(np.mean(worst)), "examine/E_T": float(np.mean([r["E_T"] for r in rows])),
              "examine/failure_rate": float(np.mean(failed)), "examine/random_accuracy": 0.9,
              "examine/invalid_share": 0.0, "q": 8, "budget_unit": "queries",
              "budgets": [{"queries": 64, "iterations": 8}], "per_instance": rows,
              "config": worst_case_config(target, seed, examiner, **audit)}
    return write_json(run_dir / "result.json", result)


def write_failed(run_dir: Path, target: str, seed: int, error: str) -> Path:
    return write_json(run_dir / "result.json", {"status": "failed", "error": error, "error_kind": "user",
                                                "task": "examine", "config": worst_case_config(target, seed)})
