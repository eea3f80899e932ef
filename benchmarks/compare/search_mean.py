"""Paired true-class probability of two examinations over windows of the search, from their ``steps.jsonl``.

An exploratory read of two runs examined on the same instances (q = 1 examiners such as BO): per instance, the
mean true-class probability of the valid proposals whose query index lies in ``[lo, hi)``, then the paired
difference A − B over instances with a Wilcoxon signed-rank test. The final 32-query window is the comparison's
primary (E_T inside S); wider windows average the search itself and are not a declared metric.

Usage: PYTHONPATH=$PWD .venv/bin/python benchmarks/compare/search_mean.py RUN_A RUN_B [--windows 468:500 32:500]
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import wilcoxon

from advaudit.audits.worst_case import STEPS_FILE
from advaudit.core.records import read_jsonl


def valid_probabilities(run: Path) -> dict[int, list[tuple[int, float]]]:
    """Per instance, (query index, true-class probability) of every valid proposal in ``run/steps.jsonl``."""
    out: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for row in read_jsonl(run / STEPS_FILE):
        for prob, valid in zip(row["true_prob"], row["valid"]):
            if valid:
                out[row["instance"]].append((row["step"], prob))
    return out


def paired_window(a: dict, b: dict, lo: int, hi: int) -> np.ndarray:
    """A − B of each instance's mean over valid proposals with ``lo <= step < hi``; shape (instances with both,)."""
    diffs = []
    for instance in sorted(set(a) & set(b)):
        pa = [p for step, p in a[instance] if lo <= step < hi]
        pb = [p for step, p in b[instance] if lo <= step < hi]
        if pa and pb:
            diffs.append(np.mean(pa) - np.mean(pb))
    return np.asarray(diffs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--windows", nargs="+", default=["468:500", "32:500", "0:100"])
    args = parser.parse_args()
    a, b = valid_probabilities(args.run_a), valid_probabilities(args.run_b)
    print("window | instances | mean A − B | median | Wilcoxon p")
    for window in args.windows:
        lo, hi = (int(x) for x in window.split(":"))
        d = paired_window(a, b, lo, hi)
        print(f"{lo}-{hi} | {len(d)} | {d.mean():+.4f} | {np.median(d):+.4f} | {wilcoxon(d).pvalue:.2g}")


if __name__ == "__main__":
    main()
