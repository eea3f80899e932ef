"""Train scikit-learn black-box targets (SVM, logistic regression) on tables, grid-searched."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from advaudit.confutil import named_object, plain, refuse_unknown_arguments, split_target_block
from advaudit.errors import require
from advaudit.models.targets.calibration import expected_calibration_error
from advaudit.models.targets.formats.own import storable_estimators
from advaudit.models.training.datamodule import TrainingData
from advaudit.models.targets.io import save_target
from advaudit.models.targets.target import SklearnTarget
from advaudit.models.targets.tracking import open_wandb

log = logging.getLogger(__name__)


def make_estimator(block: Any, seed: int) -> Any:
    """The unfitted estimator ``model.estimator`` names (a ``_target_`` block with ``_partial_: true``),
    given ``random_state=seed``; one a target file can store (:func:`storable_estimators`), else one line."""
    target, params = split_target_block(block, "model.estimator", "estimator", "a scikit-learn class",
                                        "conf/model/svm.yaml")
    refuse_unknown_arguments("model.estimator", "estimator", {"_target_": target, **params}, ("random_state",),
                             "training")
    estimator = named_object(target, "model.estimator")(random_state=seed, **params)
    name = type(estimator).__name__
    require(name in storable_estimators(), f"model.estimator builds a {name}, which a target file cannot store; "
            f"use one of {sorted(storable_estimators())} (or import a model trained elsewhere: target={{path: ...}})")
    return estimator


def train_sklearn(cfg: DictConfig) -> dict[str, Any]:
    """Grid-search ``cfg.model`` on the training split (3-fold CV), evaluate, and save the target."""
    from sklearn.model_selection import GridSearchCV  # scikit-learn is slow to import; only this path needs it

    datamodule: TrainingData = instantiate(cfg.dataset)
    datamodule.setup()
    label = cfg.model.name or str(cfg.model.estimator._target_).rsplit(".", 1)[-1]
    require(datamodule.kind == "tabular", f"model={label} is a black box for tables; "
            "use dataset=tabular (or a torch model for images)")
    meta = {"arch": f"sklearn-{label}", "arch_params": {}, "class_names": datamodule.class_names,
            "input_shape": list(datamodule.input_shape), "normalization": datamodule.normalization(),
            "kind": "tabular", "dataset": datamodule.describe(),
            "config": OmegaConf.to_container(cfg, resolve=True)}
    grid = plain(cfg.model.get("grid"), {})
    estimator = make_estimator(cfg.model.estimator, int(cfg.seed))
    train = datamodule.split("train")
    mean, std = (np.asarray(meta["normalization"][k]) for k in ("mean", "std"))
    x_train = (train.x.numpy() - mean) / std
    if grid:
        search = GridSearchCV(estimator, grid, cv=3, n_jobs=1).fit(x_train, train.y.numpy())
        estimator, chosen = search.best_estimator_, search.best_params_
    else:
        estimator, chosen = estimator.fit(x_train, train.y.numpy()), {}
    target = SklearnTarget(estimator, meta)
    metrics: dict[str, Any] = {"best_params": chosen}
    for name in ("val", "test"):
        split = datamodule.split(name)
        probs = target.predict_proba(split.x)
        metrics[f"{name}/acc"] = float((probs.argmax(1) == split.y).float().mean())
        metrics[f"{name}/ece"] = expected_calibration_error(probs, split.y)
    checkpoint = Path(cfg.paths.output_dir) / "checkpoints" / "target.pt"
    save_target(target, checkpoint, extra={"metrics": metrics})
    with open_wandb(cfg, job_type="train") as run:
        run.log({k: v for k, v in metrics.items() if "/" in k})
    log.info("%s %s test/acc %.4f checkpoint %s", label, chosen, metrics["test/acc"], checkpoint)
    return {**metrics, "checkpoint": str(checkpoint)}
