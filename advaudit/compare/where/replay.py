"""Replay: the worst conditions found for one checkpoint, rendered and scored on every other.

For every examined instance of checkpoint A with a worst valid condition, the world is rebuilt
from A's run config, the instance is taken by id from the split it was examined on, the condition
is rendered, and every checkpoint B (A included) scores the image. A's *failures* are the
instances whose re-rendered worst condition A itself misclassifies (the lowest true-class
probability is not always a misclassification when probabilities are near uniform).
``transfer[A, B]`` is the share of A's failures on which B fails too (1 on the diagonal by
construction); ``true_prob[A, B]`` is B's mean true-class probability on A's worst conditions of
all instances; ``reproduced[A]`` is the share of instances whose re-scored true-class probability
on A matches the recorded one (1 unless rendering is not deterministic or the world config
changed). The control is B's failure rate under random conditions (``1 -
examine/random_accuracy`` of B's own run): a transfer rate well above it means B shares A's
weaknesses rather than failing everywhere.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import torch

from advaudit.compare.design import Group
from advaudit.compare.metrics import Metric, run_value
from advaudit.compare.where.breakdowns import worst_conditions
from advaudit.errors import require
from advaudit.models import load_target
from advaudit.worlds import build_world, fit_target_to_world


def load_world_target(value: Any, world: Any) -> Any:
    """A run's target (its path, or the target block in its config) on the CPU, its outputs in ``world``'s
    class order (classes paired by name, :func:`advaudit.worlds.fit_target_to_world`)."""
    return fit_target_to_world(world, load_target(value, device="cpu"))


def render_worst(world: Any, run: Any, split: str) -> tuple[Any, torch.Tensor, pd.DataFrame]:
    """A run's instances (by id) and their worst conditions ``[N, C]``; rows without one dropped."""
    frame = run.per_instance()
    require(frame is not None and "worst_s" in frame,
            f"{run.run_dir} has no per-instance worst conditions (per_instance[].worst_s); rerun the audit")
    conditions = worst_conditions(frame)
    names = [f.name for f in world.factors]
    missing = [n for n in names if n not in conditions]
    require(not missing, f"{run.run_dir}: worst_s lacks factors {missing} of the world rebuilt from its config")
    keep = conditions[names].notna().all(1).to_numpy()
    frame, conditions = frame[keep].reset_index(drop=True), conditions[keep].reset_index(drop=True)
    pool = world.instances(split)
    position = {int(i): k for k, i in enumerate(pool.ids.tolist())}
    unknown = [int(i) for i in frame["instance"] if int(i) not in position]
    require(not unknown, f"{run.run_dir}: instances {unknown[:5]} are not in the {split} split of the rebuilt "
            "world; was the world config changed after the run?")
    z = pool.subset(torch.as_tensor([position[int(i)] for i in frame["instance"]], dtype=torch.long))
    s = torch.tensor(conditions[names].to_numpy(np.float32))
    return z, s, frame


def target_value(group: Group, label: str, seed: int | None = None) -> Any:
    """What a run of ``label`` named as its target (a block where the config held one, else its file);
    with ``seed``, the run at that seed (a recipe replicated over seeds has one checkpoint file per seed)."""
    runs = [r for r in group.runs if r.target == label]
    run = next((r for r in runs if seed is None or r.seed == seed), runs[0] if runs else None)
    value = run.config.get("target") if run is not None else None
    if isinstance(value, dict):
        return value
    return (run.file_label if run is not None else None) or label


def replay(group: Group, seeds: list[int], batch: int = 256) -> dict[str, Any]:
    """The failure-transfer matrix of ``group`` (a worst-case group) over ``seeds`` (module docstring)."""
    config = group.runs[0].config  # resolved; every run of the group shares these sections
    split = str((config.get("audit") or {}).get("selection_split", "val"))
    calibrated = bool((config.get("audit") or {}).get("calibrated", False))
    world = build_world(config["world"])
    loaded: dict[str, Any] = {}
    rows = []
    for seed in seeds:
        targets = {}
        for t in group.targets:                     # each seed's own file where a label has one per seed
            value = target_value(group, t, seed)
            key = json.dumps(value, sort_keys=True, default=str)
            if key not in loaded:
                loaded[key] = load_world_target(value, world)
            targets[t] = loaded[key]
        for source in group.targets:
            run = group.run(source, seed)
            if run is None:
                continue
            z, s, frame = render_worst(world, run, split)
            if len(frame) == 0:
                continue
            images = torch.cat([world.render(z.subset(torch.arange(i, min(i + batch, len(frame)))),
                                             s[i:i + batch, None, :]).cpu() for i in range(0, len(frame), batch)])
            labels = z.labels.cpu()
            recorded = frame["worst"].astype(float).to_numpy() if "worst" in frame else None
            scores = {}
            for scored, target in targets.items():
                probs = target.predict_proba(images, calibrated=calibrated).cpu()
                true_prob = probs.gather(1, labels.view(-1, 1)).squeeze(1)
                scores[scored] = (true_prob, probs.argmax(1) != labels)
            source_failed = scores[source][1]
            reproduced = (np.abs(scores[source][0].numpy() - recorded) < 1e-4 if recorded is not None
                          else np.full(len(frame), np.nan))
            for scored, (true_prob, failed) in scores.items():
                rows.extend({"seed": seed, "source": source, "scored": scored, "instance": int(i),
                             "source_failed": bool(f), "true_prob": float(p), "failed": bool(b),
                             "reproduced": float(r)}
                            for i, f, p, b, r in zip(frame["instance"], source_failed.tolist(), true_prob.tolist(),
                                                     failed.tolist(), reproduced.tolist()))
    return summarise_replay(pd.DataFrame(rows), group, seeds)


def summarise_replay(rows: pd.DataFrame, group: Group, seeds: list[int]) -> dict[str, Any]:
    """Matrices ``transfer`` and ``true_prob`` ``{source: {scored: value}}`` plus counts and control."""
    random_accuracy = Metric((group.card.control if group.card else None) or "", True)  # the card's control
    transfer: dict[str, dict[str, float]] = {}
    true_prob: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    reproduced: dict[str, float] = {}
    for source in group.targets:
        mine = rows[rows["source"] == source] if len(rows) else rows
        failures = mine[mine["source_failed"]] if len(mine) else mine
        counts[source] = int(len(failures[failures["scored"] == source])) if len(failures) else 0
        transfer[source] = {t: float(failures[failures["scored"] == t]["failed"].mean()) if counts[source] else
                            float("nan") for t in group.targets}
        own = mine[mine["scored"] == source] if len(mine) else mine
        reproduced[source] = float(own["reproduced"].mean()) if len(own) else float("nan")
        true_prob[source] = {t: float(mine[mine["scored"] == t]["true_prob"].mean()) if len(mine) else float("nan")
                             for t in group.targets}
    control = {t: float(1 - np.nanmean([run_value(group.run(t, s), random_accuracy) for s in seeds
                                        if group.run(t, s) is not None])) for t in group.targets}
    return {"transfer": transfer, "true_prob": true_prob, "source_failures": counts, "reproduced": reproduced,
            "random_failure_rate": control, "rows": rows}
