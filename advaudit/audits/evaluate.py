"""The baseline audit: accuracy, calibration and per-class accuracy on the target's test split.

``python examine.py audit=evaluate target=<target.pt>``; the data comes from the checkpoint's own
dataset config unless ``audit.dataset`` overrides it (``+dataset@audit.dataset=<conf/dataset option>``
or a block with ``_target_``). Gives the leaderboard its clean columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import torch
from omegaconf import DictConfig

from advaudit.audits.common import load_audit_target, target_datamodule
from advaudit.config import typed
from advaudit.audits.settings import EvaluateAuditConf
from advaudit.core.plots import confusion_figure, reliability_diagram
from advaudit.models.targets.calibration import expected_calibration_error, reliability_table
from advaudit.models.targets.classes import OTHER_CLASS
from advaudit.models.targets.tracking import open_wandb


def confusion_matrix(predicted: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
    """``[K, K]`` counts, rows = true class, columns = predicted class."""
    return torch.bincount(y * k + predicted, minlength=k * k).view(k, k)


def run(cfg: DictConfig) -> dict[str, Any]:
    audit = typed(EvaluateAuditConf, cfg.audit)
    target = load_audit_target(cfg)
    datamodule = target_datamodule(target, audit.dataset)
    split = datamodule.split(audit.split.value)
    target.check_input(split.x)
    probs = target.predict_proba(split.x).cpu()
    predicted = probs.argmax(1)
    k = target.num_classes
    matrix = confusion_matrix(predicted, split.y, k)
    per_class = (matrix.diag().float() / matrix.sum(1).clamp_min(1).float()).tolist()
    if OTHER_CLASS in target.class_names:  # a class map's "any other output" has no items of its own
        del per_class[target.class_names.index(OTHER_CLASS)]
    out = Path(cfg.paths.output_dir)
    table = reliability_table(probs, split.y)
    reliability_png = reliability_diagram(table, out / "reliability.png", title="target calibration")
    confusion_png = confusion_figure(matrix.numpy(), target.class_names, out / "confusion.png")
    true_prob = probs.gather(1, split.y[:, None]).squeeze(1)
    metrics = {
        "evaluate/acc": float((predicted == split.y).float().mean()),
        "evaluate/ece": expected_calibration_error(probs, split.y),
        "evaluate/worst_class_acc": min(per_class),
        "evaluate/mean_true_prob": float(true_prob.mean()),
    }
    per_instance = pd.DataFrame({"instance": range(len(split)), "label": split.y.tolist(),
                                 "class": [target.class_names[int(c)] for c in split.y],
                                 "true_prob": true_prob.tolist(), "correct": (predicted == split.y).tolist()})
    per_instance.to_csv(out / "per_instance.csv", index=False)  # paired comparison of checkpoints (advaudit.compare)
    with open_wandb(cfg, job_type="examine", name="evaluate") as wb:
        wb.log(metrics)
        wb.log_image("evaluate/reliability", reliability_png)
        wb.log_image("evaluate/confusion", confusion_png)
    return {**metrics, "per_class_acc": dict(zip([c for c in target.class_names if c != OTHER_CLASS], per_class)),
            "n_items": len(split), "class_alignment": target.meta.get("class_alignment"),
            "plots": [str(reliability_png), str(confusion_png)]}
