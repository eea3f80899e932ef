"""Does a fault test detect an injected fault? Fault target against control target, over training seeds.

A fault-test statistic (the share of failing tests that moved a feature the fault's way) that moves
as much against a control target trained without the fault detects nothing. These functions read
the fault-tests audit's result records (``fault_tests.json``) of a fault target and a control
target per training seed, pool the failing tests over the seeds, and put a cluster-bootstrap
interval over the seeds (the independent replications) on the fault share, the control share and
their difference.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from advaudit.core.intervals import DEFAULT_RESAMPLES, bootstrap, mean_with_ci

KINDS = ("generator", "pixel_l2", "pixel_linf")  # the fault-tests audit's kinds of tests
_SHARES = ("fault", "control", "difference")


def pooled_shares(counts: np.ndarray, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """Pooled shares of the fault target, the control target and their difference.

    Args:
        counts: ``[seeds, 2 (fault, control), 2 (moved, failing)]``: per training seed and target,
            the failing tests that moved the feature and the failing tests.

    Returns ``{"fault", "control", "difference": {"share", "lo", "hi"} or None, "failing": {"fault",
    "control"}}``: each share is ``sum moved / sum failing`` over the seeds (a seed with 2 failing
    tests weighs less than one with 60), its 95% interval resamples whole seeds (:func:`bootstrap`;
    resamples without failing tests are left out), and it is None where no failing test exists.
    """
    counts = np.asarray(counts, dtype=np.float64)

    def shares(c: np.ndarray) -> np.ndarray:  # [..., seeds, 2, 2] -> [..., 3]: fault, control, difference
        moved, failing = c[..., 0].sum(-2), c[..., 1].sum(-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = moved / failing
        return np.concatenate([share, share[..., :1] - share[..., 1:]], -1)

    point = shares(counts)
    low, high = bootstrap(lambda index: shares(counts[index]), len(counts), resamples=resamples, seed=seed)
    result: dict[str, Any] = {
        name: None if not np.isfinite(point[i]) else {"share": float(point[i]), "lo": float(low[i]),
                                                      "hi": float(high[i])}
        for i, name in enumerate(_SHARES)}
    result["failing"] = {"fault": int(counts[:, 0, 1].sum()), "control": int(counts[:, 1, 1].sum())}
    return result


def detection_over_control(per_seed: Mapping[str, Mapping[str, Any]], seeds: Sequence[int], faults: Sequence[str],
                           directions: Mapping[str, str], kinds: Sequence[str] = KINDS,
                           control: str = "clean") -> dict[str, Any]:
    """Per fault, direction and kind of test: how much more often the failing tests moved the fault's own
    feature the fault's way against the fault target than against the control target.

    Args:
        per_seed: result records by run name ``<fault>_seed<s>`` and ``<control>_seed<s>``.
        seeds: the training seeds; a seed without both records is left out.
        faults: the injected faults, each named by the feature it injects (``brightness``, ``size``).
        directions: a label per key prefix of the audit's directions (``""``; ``"reverse/"``).

    Returns ``{"<fault>/<direction>/<kind>": {**pooled_shares(...), "seeds", "paired"}}``: only a
    difference whose interval lies above 0 is a detection; ``paired`` is :func:`mean_with_ci` of the
    per-seed differences of the shares for seeds where both targets have failing tests.
    """
    detection: dict[str, Any] = {}
    for fault in faults:
        runs = [(per_seed[f"{fault}_seed{s}"], per_seed[f"{control}_seed{s}"]) for s in seeds
                if f"{fault}_seed{s}" in per_seed and f"{control}_seed{s}" in per_seed]
        if not runs:
            continue
        for direction, prefix in directions.items():
            for kind in kinds:
                key = f"faults/{prefix}{kind}/feature/{fault}/moved_share"
                # per seed: [moved, failing] for the fault target, then for the control
                counts = np.array([[r.get(key) or 0.0, r.get(f"{key}/n") or 0] for pair in runs for r in pair],
                                  dtype=float).reshape(len(runs), 2, 2)
                counts[:, :, 0] *= counts[:, :, 1]  # share x failing tests = tests that moved
                differences = [a.get(key) - b.get(key) for a, b in runs if a.get(key) is not None
                               and b.get(key) is not None]
                detection[f"{fault}/{direction}/{kind}"] = {**pooled_shares(counts), "seeds": len(runs),
                                                            "paired": mean_with_ci(differences)}
    return detection
