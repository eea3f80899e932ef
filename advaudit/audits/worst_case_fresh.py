"""What a worst-case examination measures after its last step, in its run, and records for its report.

Beyond the examiner's own queries (``steps.jsonl``) the audit renders and queries on conditions it
draws itself: each instance's worst valid case rendered at >= :data:`GALLERY_PX` for the gallery,
``k`` random conditions per instance (generator seeded ``seed + 7``) rendered, judged and shown to the
target (its accuracy under random conditions, the baseline of the t-SNE plot), and, with
``audit.judge``, the independent judge's verdicts on the worst cases and on the random conditions.
:func:`record_fresh_conditions` does all of it and saves it to ``<run dir>/fresh_conditions.pt``; the
report (:mod:`advaudit.audits.worst_case_report`) reads that record and renders or queries nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from advaudit.audits import examiner_metrics as metrics
from advaudit.audits.settings import Mode
from advaudit.worlds.protocol import offered
from advaudit.worlds.validity import independent_verdicts

GALLERY_PX = 96
FRESH_FILE = "fresh_conditions.pt"


def gallery_world(world: Any) -> Any:
    """``world`` rendering at least :data:`GALLERY_PX` pixels a side, where it can change its size."""
    size, resize = offered(world, "image_size"), offered(world, "with_image_size")
    if resize is not None and isinstance(size, int) and size < GALLERY_PX:
        return resize(GALLERY_PX)
    return world


@dataclass
class WorstCases:
    """Each instance's worst valid proposal in the history: ``index`` ``[N]`` (query, -1 where none is
    valid), ``safe`` ``[N]`` (``index`` with 0 for -1), ``predicted`` ``[N]`` (class predicted there) and
    ``s`` ``[N, C]`` (its factors)."""

    index: np.ndarray
    safe: np.ndarray
    predicted: np.ndarray
    s: Tensor

    @property
    def found(self) -> np.ndarray:
        """``[N]`` bool: the instance has a valid proposal."""
        return self.index >= 0


def worst_cases(history: dict[str, Any], strength: bool) -> WorstCases:
    """The worst valid proposal of every instance of ``history`` (see :func:`load_history`'s arrays)."""
    index = metrics.worst_index(history["true_prob"], history["valid"], strength)
    rows = np.arange(len(index))
    safe = np.where(index >= 0, index, 0)
    s = torch.as_tensor(history["s"][rows, safe], dtype=torch.float32)
    return WorstCases(index, safe, history["predicted"][rows, safe], s)


#: the fewest random conditions per instance: enough for a per-instance accuracy under random conditions that
#: pairs checkpoints instance by instance (:mod:`advaudit.compare.differences`), also for examiners with q = 1
MIN_RANDOM_CONDITIONS = 32


def fresh_count(q: int, queries: int) -> int:
    """How many random conditions per instance (and final proposals in the t-SNE): as many as the last
    iteration's proposals, at least :data:`MIN_RANDOM_CONDITIONS`, at most the queries made."""
    return min(max(q, MIN_RANDOM_CONDITIONS), queries)


def record_fresh_conditions(ex: Any, history: dict[str, Any], q: int) -> dict[str, Any]:
    """Render, judge and query what the report needs beyond ``history``; save it to ``<ex.out>/`` :data:`FRESH_FILE`.

    ``ex`` is the examination (:class:`advaudit.audits.worst_case.Examination`). Returns (and saves)
    ``gallery`` ``[N, ...]`` (worst valid cases rendered for people), ``random_free`` ``[N, k, C_free]``
    (unit cube), ``random_s`` ``[N, k, C]``, ``random_valid`` and ``random_ok`` ``[N*k]`` bool (the
    validity checks' verdict; the target's prediction is the true class), ``random_true_prob`` ``[N*k]`` (the
    target's true-class probability there: T = 0 of E_T, the standard protocol) and, with ``audit.judge``,
    ``judge_worst`` ``[N]`` bool and ``judge_random`` ``[N*k]`` bool (the judge names the true class under each
    random condition).

    A shard of an examination (``ex.rows`` of its ``ex.n_all`` instances) draws the random conditions of the
    whole examination and keeps its rows, so the shards' records put together are the one job's
    (:func:`join_fresh_conditions`).
    """
    audit, z, space, device = ex.audit, ex.z, ex.space, ex.device
    labels = z.labels.cpu().numpy()
    worst = worst_cases(history, audit.mode == Mode.strength)
    gallery = gallery_world(ex.world).render(z, worst.s.unsqueeze(1).to(device)).cpu()
    k = fresh_count(q, history["true_prob"].shape[1])
    random_free = torch.rand(ex.n_all, k, len(space.free), generator=torch.Generator().manual_seed(int(ex.cfg.seed) + 7))
    random_free = random_free[ex.rows] if len(ex.rows) < ex.n_all else random_free
    random_s = space.assemble(random_free)
    random_x, random_valid, _ = ex.judge.render(z, random_s.to(device))
    probs = ex.target.predict_proba(random_x, calibrated=audit.calibrated).cpu()
    predicted = probs.argmax(1).numpy()
    record = {"gallery": gallery, "random_free": random_free, "random_s": random_s,
              "random_valid": random_valid.reshape(-1).cpu(),
              "random_ok": torch.as_tensor(predicted == np.repeat(labels, k)),
              "random_true_prob": probs.gather(1, torch.as_tensor(np.repeat(labels, k))[:, None]).squeeze(1)}
    if audit.judge:
        judge_worst, judge_random = independent_verdicts(ex.world, audit.judge, z, worst.s, random_s, device)
        record.update(judge_worst=judge_worst.cpu(), judge_random=judge_random.reshape(-1).cpu())
    save_fresh_conditions(record, Path(ex.out))
    return record


def read_fresh_conditions(out: Path) -> dict[str, Any]:
    """The record :func:`record_fresh_conditions` saved in the run dir ``out``."""
    return torch.load(Path(out) / FRESH_FILE, weights_only=True)


def save_fresh_conditions(record: dict[str, Any], out: Path) -> Path:
    """Save ``record`` as the run dir ``out``'s :data:`FRESH_FILE` (atomically)."""
    path = Path(out) / FRESH_FILE
    torch.save(record, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)
    return path


#: per instance ``[N, ...]`` (one row each) and per random condition ``[N*k]`` (``k`` rows each)
_PER_INSTANCE = ("gallery", "random_free", "random_s", "judge_worst")
_PER_CONDITION = ("random_valid", "random_ok", "random_true_prob", "judge_random")


def join_fresh_conditions(parts: list[dict[str, Any]], rows: list[Tensor]) -> dict[str, Any]:
    """The record of the whole examination from its shards' records ``parts``, whose instances sit at
    ``rows`` (``[n_k]`` each) of it: every tensor put back in the examination's order."""
    n = sum(len(r) for r in rows)
    k = parts[0]["random_free"].shape[1]
    joined: dict[str, Any] = {}
    for key in parts[0]:
        per_condition = key in _PER_CONDITION
        width = k if per_condition else 1
        first = parts[0][key]
        whole = first.new_empty((n * width, *first.shape[1:]))
        for part, where in zip(parts, rows):
            index = (where[:, None] * width + torch.arange(width)).reshape(-1) if per_condition else where
            whole[index] = part[key]
        joined[key] = whole
    return joined
