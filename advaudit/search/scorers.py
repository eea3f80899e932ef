"""Per-item distances behind adversarial distance and GAD, computed once per item and cached.

The attack runs once per eligible item (never once per replication) in chunks; every finished
chunk is appended to ``<out>/scores/<name>.jsonl`` so an interrupted run resumes where it stopped.
Distances are MAEs in units of the attack box width (``audit.box``: [0, 1] for images, so pixel units; each
feature's observed range for tables, so columns of different scales count alike).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from torch import Tensor

from advaudit.config import typed
from advaudit.config.schemas import PseudoModelConf
from advaudit.confutil import plain
from advaudit.core.progress import progress
from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.errors import require
from advaudit.search.attacks import AttackResult, attack_items, foolbox_attack
from advaudit.search.gad_attack import sign_gradient_attack
from advaudit.search.pseudo_model import extract_pseudo_model

log = logging.getLogger(__name__)


@dataclass
class ScoreInputs:
    """What a scorer sees: eligible items ``[n, *shape]`` with their dataset indices ``[n]``, every
    split item ``[N, *shape]`` with predicted labels ``[N]`` (attack starting points), the data box
    ``low``/``high`` ``[*shape]``, the critical class and the target."""

    items: Tensor
    item_index: Tensor
    all_items: Tensor
    all_predicted: Tensor
    low: Tensor
    high: Tensor
    critical_class: int
    target: Any


def _attack_chunk(name: str, cfg: DictConfig, inputs: ScoreInputs, index: Tensor, state: dict[str, Any]) -> AttackResult:
    """Run the configured attack on ``inputs.items[index]``."""
    x = inputs.items[index]
    attack = cfg.attack
    if name == "gad":
        black_box = lambda b: inputs.target.predict_proba(b).argmax(1)  # noqa: E731
        return sign_gradient_attack(x, black_box, state["pseudo_model"], inputs.low, inputs.high,
                                    step=float(attack.step), max_steps=int(attack.max_steps))
    method = str(attack.method)
    bounds = (inputs.low, inputs.high)
    if method == "hsj":  # on the target's device (one device for the whole attack)
        return attack_items(inputs.target, x, inputs.all_items, inputs.all_predicted, bounds, steps=int(attack.steps),
                            gradient_queries=int(attack.gradient_queries),
                            max_gradient_queries=int(attack.max_gradient_queries),
                            binary_steps=int(attack.get("binary_steps", 10)), seed=int(attack.get("seed", 0)) + int(index[0]),
                            probe_resolution=attack.get("probe_resolution"))
    require(hasattr(inputs.target, "net"), f"search.attack.method={method} needs a torch target; "
            "use search.attack.method=hsj for black boxes")
    params = plain(attack.get("params"), {})
    return foolbox_attack(x, inputs.target.eval(), method, steps=int(attack.steps),
                          bounds=(float(inputs.low.min()), float(inputs.high.max())), **params)


def item_distances(name: str, cfg: DictConfig, inputs: ScoreInputs, out: Path) -> tuple[Tensor, dict[str, Any]]:
    """MAE to the adversarial ``[n]`` (NaN where the attack failed) for every eligible item, resuming
    from ``<out>/scores/<name>.jsonl``; also returns facts about the run (queries, R^2, failures)."""
    path = out / "scores" / f"{name}.jsonl"
    done = {int(r["item"]): r for r in read_jsonl(path)} if path.exists() else {}
    keys = inputs.item_index.tolist()
    todo = torch.tensor([i for i, key in enumerate(keys) if key not in done], dtype=torch.long)
    facts: dict[str, Any] = {"resumed_items": len(keys) - len(todo)}
    started = time.perf_counter()
    state: dict[str, Any] = {}
    if len(todo) and name == "gad":
        settings = typed(PseudoModelConf, cfg.pseudo_model)
        black_box = lambda b: inputs.target.predict_proba(b)[:, inputs.critical_class]  # noqa: E731
        state["pseudo_model"], facts["pseudo_r2"] = extract_pseudo_model(black_box, inputs.all_items, settings)
        append_jsonl(out / "scores" / "gad_pseudo_model.jsonl", {"r2": facts["pseudo_r2"]})
    chunk = int(cfg.attack.get("chunk", 500))
    queries = 0
    scale = (inputs.high - inputs.low).clamp_min(1e-12)
    with progress(total=len(todo), desc=f"{name} attack", unit="item") as bar:
        for start in range(0, len(todo), chunk):
            index = todo[start:start + chunk]
            result = _attack_chunk(name, cfg, inputs, index, state)
            queries += result.queries
            mae = ((inputs.items[index] - result.adversarial) / scale).abs().flatten(1).mean(1)
            append_jsonl(path, [{"item": keys[i], "mae": float(m) if ok else None, "ok": bool(ok)}
                                for i, m, ok in zip(index.tolist(), mae.tolist(), result.ok.tolist())])
            for i, m, ok in zip(index.tolist(), mae.tolist(), result.ok.tolist()):
                done[keys[i]] = {"mae": m if ok else None, "ok": ok}
            bar.update(len(index))
    values = torch.tensor([float("nan") if done[k]["mae"] is None else done[k]["mae"] for k in keys],
                          dtype=torch.float64)
    if name == "gad" and "pseudo_r2" not in facts:
        previous = read_jsonl(out / "scores" / "gad_pseudo_model.jsonl")
        facts["pseudo_r2"] = previous[-1]["r2"] if previous else None
    facts.update({"queries_per_item": queries / max(1, len(todo)), "attack_failures": int(values.isnan().sum()),
                  "attack_seconds": round(time.perf_counter() - started, 2)})
    require(int((~values.isnan()).sum()) >= 3,
            f"the {name} attack succeeded on only {int((~values.isnan()).sum())} of {len(values)} items, too few to fit "
            "F(p); " + ("raise search.gad.attack.max_steps or step, or use search.gad.pseudo_model.design=pool "
                        f"(pseudo model R^2 = {facts.get('pseudo_r2')})" if name == "gad" else
                        "raise search.adversarial_distance.attack.steps or try attack.method=hsj"))
    if facts["attack_failures"]:
        log.warning("%s: the attack failed on %d of %d items; they are kept, marked, out of the LOWESS fit "
                    "and ranked last", name, facts["attack_failures"], len(values))
    return values, facts
