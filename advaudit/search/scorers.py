"""The scorers adversarial distance and GAD: per-item distances computed once per item and cached.

Each is one class here plus one YAML ``conf/search/method/<name>.yaml`` naming it with ``_target_``
(:mod:`advaudit.search.methods` says what a scorer does). The attack runs once per eligible item
(never once per replication) in chunks; every finished chunk is appended to
``<out>/scores/<name>.jsonl`` so an interrupted run resumes where it stopped.
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
from torch import Tensor

from advaudit.config import typed
from advaudit.search.settings import AttackMethod, DecisionAttackConf, GADAttackConf, LowessConf, PseudoModelConf
from advaudit.core.progress import progress
from advaudit.core.records import append_jsonl, read_jsonl
from advaudit.errors import require
from advaudit.search.adversarial_distance import distance_values, pool_scores
from advaudit.search.attacks import AttackResult, attack_items, foolbox_attack
from advaudit.search.gad_attack import sign_gradient_attack
from advaudit.search.pseudo_model import extract_pseudo_model

log = logging.getLogger(__name__)


@dataclass
class ScoreInputs:
    """What a scorer sees: eligible items ``[n, *shape]`` with their dataset indices ``[n]``, every
    split item ``[N, *shape]`` with predicted labels ``[N]`` (attack starting points), the data box
    ``low``/``high`` ``[*shape]``, the critical class and the target; ``all_proba`` ``[N, K]``: the target's calibrated
    probabilities of every split item when the caller has them (GAD's pool design reads them instead of asking
    again)."""

    items: Tensor
    item_index: Tensor
    all_items: Tensor
    all_predicted: Tensor
    low: Tensor
    high: Tensor
    critical_class: int
    target: Any
    all_proba: Tensor | None = None


class AttackScorer:
    """A scorer whose per-item value is the (log-)MAE to an attack's adversarial and whose per-pool
    score is adversarial distance: that value less its LOWESS fit on confidence (:mod:`advaudit.search.adversarial_distance`).

    Subclasses say how a chunk of items is attacked (:meth:`attack`) and what the attack needs first
    (:meth:`prepare`). Results are appended to ``<cache>.jsonl`` chunk by chunk, so an interrupted run
    resumes where it stopped.
    """

    def __init__(self, lowess: LowessConf | Any, chunk: int) -> None:
        self.lowess = typed(LowessConf, lowess)
        self.chunk = chunk

    def prepare(self, inputs: ScoreInputs, cache: Path, facts: dict[str, Any]) -> None:
        """Work done once before the first chunk is attacked (nothing by default)."""

    def resumed(self, cache: Path, facts: dict[str, Any]) -> None:
        """Facts of a run whose items were all attacked earlier (nothing by default)."""

    def attack(self, x: Tensor, index: Tensor, inputs: ScoreInputs) -> AttackResult:
        """Adversarials of ``x`` ``[b, *shape]`` (``inputs.items[index]``)."""
        raise NotImplementedError

    def hint(self, where: str, facts: dict[str, Any]) -> str:
        """What to change when too few attacks succeed (``where``: the method's config key)."""
        return f"raise {where}.attack.steps or try {where}.attack.method=hsj"

    def item_values(self, inputs: ScoreInputs, cache: Path) -> tuple[Tensor, dict[str, Any]]:
        """``[n]`` (log-)MAE to the adversarial of every eligible item (NaN where the attack failed),
        resuming from ``<cache>.jsonl``; also facts about the run (queries, failures, seconds)."""
        facts = self.score_part(inputs, cache, 0, 1)
        done = {int(r["item"]): r for r in read_jsonl(cache.with_name(cache.name + ".jsonl"))}
        values = torch.tensor([float("nan") if done[k]["mae"] is None else done[k]["mae"]
                               for k in inputs.item_index.tolist()], dtype=torch.float64)
        facts.update(self.chunk_facts(cache))
        facts["attack_failures"] = int(values.isnan().sum())
        succeeded = int((~values.isnan()).sum())
        require(succeeded >= 3, f"the {cache.name} attack succeeded on only {succeeded} of {len(values)} items, too "
                f"few to fit F(p); {self.hint(f'search.{cache.name}', facts)}")
        if facts["attack_failures"]:
            log.warning("%s: the attack failed on %d of %d items; they are kept, marked, out of the LOWESS fit "
                        "and ranked last", cache.name, facts["attack_failures"], len(values))
        return distance_values(values, self.lowess.log), facts

    def score_part(self, inputs: ScoreInputs, cache: Path, shard: int, shards: int) -> dict[str, Any]:
        """Attack the eligible items of chunks ``shard``, ``shard + shards``, ... (chunks of ``chunk`` items in the
        eligible items' order, as one job cuts them, each attacked with the same seed there), skipping those
        ``<cache>.jsonl`` holds already; each finished chunk is appended to it and its queries and seconds to
        ``<cache>_chunks.jsonl``. Returns ``resumed_items`` (this part's items found done) and what
        :meth:`prepare` or :meth:`resumed` said."""
        path = cache.with_name(cache.name + ".jsonl")
        done = {int(r["item"]) for r in read_jsonl(path)}
        keys = inputs.item_index.tolist()
        mine = [i for i in range(len(keys)) if (i // self.chunk) % shards == shard]
        todo = torch.tensor([i for i in mine if keys[i] not in done], dtype=torch.long)
        facts: dict[str, Any] = {"resumed_items": len(mine) - len(todo)}
        if len(todo):
            self.prepare(inputs, cache, facts)
        else:
            self.resumed(cache, facts)
        scale = (inputs.high - inputs.low).clamp_min(1e-12)
        with progress(total=len(todo), desc=f"{cache.name} attack", unit="item") as bar:
            for chunk in torch.unique_consecutive(todo // self.chunk).tolist():
                started = time.perf_counter()
                index = todo[todo // self.chunk == chunk]
                result = self.attack(inputs.items[index], index, inputs)
                mae = ((inputs.items[index] - result.adversarial) / scale).abs().flatten(1).mean(1)
                append_jsonl(path, [{"item": keys[i], "mae": float(m) if ok else None, "ok": bool(ok)}
                                    for i, m, ok in zip(index.tolist(), mae.tolist(), result.ok.tolist())])
                append_jsonl(self._chunk_record(cache), {"chunk": chunk, "items": len(index), "queries": result.queries,
                                                         "seconds": round(time.perf_counter() - started, 3)})
                bar.update(len(index))
        return facts

    def chunk_facts(self, cache: Path) -> dict[str, Any]:
        """``queries_per_item`` and ``attack_seconds`` over every chunk the cache holds (each chunk's record once,
        however many runs or shards attacked them)."""
        chunks = {int(r["chunk"]): r for r in read_jsonl(self._chunk_record(cache))}
        items = sum(int(r["items"]) for r in chunks.values())
        return {"queries_per_item": sum(int(r["queries"]) for r in chunks.values()) / max(1, items),
                "attack_seconds": round(sum(float(r["seconds"]) for r in chunks.values()), 2)}

    @staticmethod
    def _chunk_record(cache: Path) -> Path:
        return cache.with_name(cache.name + "_chunks.jsonl")

    def pool_scores(self, values: Tensor, confidence: Tensor, pools: Tensor) -> Tensor:
        """``[R, P]`` adversarial distance of every pool item (lower = query first; failed attacks last)
        from ``values`` ``[n]`` (:meth:`item_values`), ``confidence`` ``[n]`` and ``pools`` ``[R, P]``."""
        return pool_scores(values, confidence, pools, self.lowess)


class AdversarialDistance(AttackScorer):
    """Adversarial distance (the adversarial-distance paper): a decision-based attack needing only
    predicted labels; advaudit's batched HopSkipJump (``attack.method=hsj``) or foolbox 3's."""

    def __init__(self, attack: DecisionAttackConf | Any = None, lowess: LowessConf | Any = None) -> None:
        self.settings = typed(DecisionAttackConf, attack)
        super().__init__(lowess, self.settings.chunk)

    def attack(self, x: Tensor, index: Tensor, inputs: ScoreInputs) -> AttackResult:
        attack = self.settings
        bounds = (inputs.low, inputs.high)
        if attack.method == AttackMethod.hsj:  # on the target's device (one device for the whole attack)
            return attack_items(inputs.target, x, inputs.all_items, inputs.all_predicted, bounds, steps=attack.steps,
                                gradient_queries=attack.gradient_queries,
                                max_gradient_queries=attack.max_gradient_queries,
                                binary_steps=attack.binary_steps, seed=attack.seed + int(index[0]),
                                probe_resolution=attack.probe_resolution)
        method = AttackMethod(attack.method).value
        require(hasattr(inputs.target, "net"), f"attack.method={method} needs a torch target; "
                "use attack.method=hsj for black boxes")
        return foolbox_attack(x, inputs.target.eval(), method, steps=attack.steps,
                              bounds=(float(inputs.low.min()), float(inputs.high.max())), **attack.params)


class GAD(AttackScorer):
    """GAD (the generalised adversarial-distance paper): a pseudo-model of the black box's critical-class
    probability, fitted once, whose gradient signs drive the attack on the black box's labels."""

    def __init__(self, pseudo_model: PseudoModelConf | Any = None, attack: GADAttackConf | Any = None,
                 lowess: LowessConf | Any = None) -> None:
        self.pseudo_settings = typed(PseudoModelConf, pseudo_model)
        self.settings = typed(GADAttackConf, attack)
        super().__init__(lowess, self.settings.chunk)

    def prepare(self, inputs: ScoreInputs, cache: Path, facts: dict[str, Any]) -> None:
        black_box = lambda b: inputs.target.predict_proba(b)[:, inputs.critical_class]  # noqa: E731
        known = None if inputs.all_proba is None else inputs.all_proba[:, inputs.critical_class]
        self.pseudo_model, facts["pseudo_r2"] = extract_pseudo_model(black_box, inputs.all_items, self.pseudo_settings,
                                                                     known)
        append_jsonl(self._pseudo_record(cache), {"r2": facts["pseudo_r2"]})

    def resumed(self, cache: Path, facts: dict[str, Any]) -> None:
        previous = read_jsonl(self._pseudo_record(cache))
        facts["pseudo_r2"] = previous[-1]["r2"] if previous else None

    def attack(self, x: Tensor, index: Tensor, inputs: ScoreInputs) -> AttackResult:
        black_box = lambda b: inputs.target.predict_proba(b).argmax(1)  # noqa: E731
        return sign_gradient_attack(x, black_box, self.pseudo_model, inputs.low, inputs.high,
                                    step=self.settings.step, max_steps=self.settings.max_steps)

    def hint(self, where: str, facts: dict[str, Any]) -> str:
        return (f"raise {where}.attack.max_steps or step, or use {where}.pseudo_model.design=pool "
                f"(pseudo model R^2 = {facts.get('pseudo_r2')})")

    @staticmethod
    def _pseudo_record(cache: Path) -> Path:
        return cache.with_name(cache.name + "_pseudo_model.jsonl")
