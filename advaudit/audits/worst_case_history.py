"""A worst-case examination's step records (``steps.jsonl``) as per-instance arrays: what a shard keeps for
the merge and the report reads, without the report's imports (plots, statistics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from advaudit.core.records import read_jsonl


def load_history(out: Path, n: int) -> dict[str, Any]:
    """Per-instance arrays in query order: ``true_prob`` ``[N, Q]``, ``predicted`` ``[N, Q]``,
    ``valid`` ``[N, Q]`` (all True for records written before validity was judged; False where the
    reference judge was not asked, :mod:`advaudit.audits.lazy_validity`), ``checks``
    ``{name: [N, Q]}``, ``s`` ``[N, Q, C]`` (factor units)."""
    return history_of(read_jsonl(out / "steps.jsonl"), n)


def history_of(records: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """:func:`load_history`'s arrays from the step records of a ``steps.jsonl``, read already."""
    records = sorted(records, key=lambda r: r["step"])
    order: dict[int, list[dict]] = {}
    for r in records:
        order.setdefault(r["instance"], []).append(r)
    ids = list(order)[:n]

    def stack(get: Any) -> np.ndarray:
        return np.stack([np.concatenate([np.asarray(get(r)) for r in order[i]]) for i in ids])

    def verdicts(get: Any) -> np.ndarray:  # a verdict the judge was not asked for (None) is not a valid one
        return stack(lambda r: [v is True for v in get(r)]).astype(bool)

    true_prob = stack(lambda r: r["true_prob"])
    valid = verdicts(lambda r: r.get("valid", [True] * len(r["true_prob"])))
    names = list(records[0].get("checks", {}))
    return {"ids": np.asarray(ids), "true_prob": true_prob, "predicted": stack(lambda r: r["predicted"]),
            "valid": valid, "checks": {c: verdicts(lambda r, c=c: r["checks"][c]) for c in names},
            "s": stack(lambda r: r["s"])}
