"""Power of the paired comparison, estimated by resampling a paired pilot.

A pilot is what a comparison of two checkpoints already has: per (instance, seed) the headline
value of checkpoint A and of checkpoint B on the same instance (:func:`advaudit.compare.differences.paired_frame`).
A design of ``n`` paired instances and ``k`` seeds is simulated by drawing ``n`` of the pilot's
instances with replacement and, for each, ``k`` of that instance's examinations (its seeds) with
replacement; the test :mod:`advaudit.compare.differences` uses is run on each simulated design, and the
power is the share of designs with ``p < alpha``:

- continuous headlines (worst true-class probability, E_T): Wilcoxon signed-rank on the ``n``
  per-instance differences, each averaged over its ``k`` examinations. Resampling with replacement
  makes ties that new instances would not have (and scipy then runs a slow permutation test at
  n <= 50): ties are broken by a relative jitter of 1e-9, so the exact test applies as on new data;
- 0/1 outcomes (failed): McNemar on the ``n x k`` (instance, seed) pairs, exact binomial below 25
  discordant pairs (as statsmodels' ``mcnemar`` with ``exact=...`` / ``correction=...``).

The power is that of detecting the difference *seen in the pilot*: a pilot with no difference
gives about ``alpha`` at any ``n``. An instance the pilot examined with one seed contributes its
one value however large ``k`` is (its seed-to-seed spread is unobserved), so the benefit of more
seeds is credited only where the pilot re-examined instances. With ``audit.selection=stratified``
a new seed also draws new instances: ``n`` counts distinct instances entering the test.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binom, chi2, wilcoxon

from advaudit.core.intervals import format_interval
from advaudit.core.statistics import ALPHA
from advaudit.errors import require

TARGET_POWER = 0.8
CHUNK_CELLS = 2_000_000  # resampled values held at once (replicates x n x k)


@dataclass(frozen=True)
class Pilot:
    """Paired pilot values, padded per instance.

    Attributes:
        a: ``[I, K]`` checkpoint A's value per instance and examination (NaN past ``counts``).
        b: ``[I, K]`` checkpoint B's value, same layout.
        counts: ``[I]`` examinations (seeds) per instance, each >= 1.
        binary: 0/1 outcomes (McNemar) rather than continuous scores (Wilcoxon).
    """

    a: np.ndarray
    b: np.ndarray
    counts: np.ndarray
    binary: bool

    @property
    def n_instances(self) -> int:
        return int(len(self.counts))

    @property
    def seeds_per_instance(self) -> float:
        return float(self.counts.mean()) if len(self.counts) else 0.0


@dataclass(frozen=True)
class PowerEstimate:
    """Estimated power of one design, with a 95% Wilson interval for the resampling error."""

    n_instances: int
    n_seeds: int
    power: float
    lo: float
    hi: float
    replicates: int


def pilot_from_pairs(pairs: pd.DataFrame, binary: bool) -> Pilot:
    """A :class:`Pilot` from rows ``(instance, seed, a, b)`` (as ``differences.paired_frame`` returns)."""
    rows = pairs.dropna(subset=["a", "b"])
    groups = [g for _, g in rows.groupby("instance", sort=True)]
    width = max((len(g) for g in groups), default=1)
    a = np.full((len(groups), width), np.nan)
    b = np.full((len(groups), width), np.nan)
    counts = np.zeros(len(groups), dtype=int)
    for i, g in enumerate(groups):
        counts[i] = len(g)
        a[i, :len(g)] = g["a"].to_numpy(float)
        b[i, :len(g)] = g["b"].to_numpy(float)
    return Pilot(a, b, counts, binary)


def wilcoxon_p(diffs: np.ndarray) -> np.ndarray:
    """``[R]`` two-sided Wilcoxon signed-rank p-values of ``[R, n]`` differences (zeros dropped).

    Equals :func:`advaudit.core.statistics.signed_rank_test` row by row (p = 1 where every difference is 0),
    except for rows with ties or zeros at n <= 13: there scipy runs a permutation test over 2^n sign flips per
    row, which made a power estimate of tied scores (floors, identical per-instance values) take minutes; those
    rows take the normal approximation with the tie correction instead (a power estimate, not a verdict).
    """
    p = np.ones(diffs.shape[0])
    nonzero = np.any(diffs != 0, axis=1)
    has_zero = np.any(diffs == 0, axis=1)
    ordered = np.sort(np.abs(diffs), axis=1)
    tied = np.any((np.diff(ordered, axis=1) == 0) & (ordered[:, 1:] != 0), axis=1) | has_zero
    small = diffs.shape[1] <= 13
    # scipy picks its method once per call: one row with a zero would send every row of the batch
    # to the permutation test (2^n statistics at n <= 13); rows without ties or zeros take the exact
    # test, as each would alone in statistics.signed_rank_test
    for rows, method in ((nonzero & ~tied, "auto"), (nonzero & tied, "asymptotic" if small else "auto")):
        if rows.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scipy warns on ties/zeros at small n (normal approximation)
                p[rows] = wilcoxon(diffs[rows], axis=1, zero_method="wilcox", alternative="two-sided",
                                   method=method).pvalue
    return p


def mcnemar_p(only_a: np.ndarray, only_b: np.ndarray) -> np.ndarray:
    """``[R]`` McNemar p-values from discordant counts, as :func:`advaudit.core.statistics.mcnemar_test` computes them.

    Fewer than 25 discordant pairs: exact two-sided binomial, ``min(1, 2 P(X <= min))``; else
    chi-square with continuity correction, ``(|b - c| - 1)^2 / (b + c)``; no discordant pair: 1.
    """
    only_a, only_b = np.asarray(only_a, dtype=float), np.asarray(only_b, dtype=float)
    total = only_a + only_b
    exact = np.minimum(1.0, 2 * binom.cdf(np.minimum(only_a, only_b), total, 0.5))
    with np.errstate(divide="ignore", invalid="ignore"):
        approx = chi2.sf((np.abs(only_a - only_b) - 1) ** 2 / total, 1)
    return np.where(total == 0, 1.0, np.where(total < 25, exact, approx))


def simulated_p(pilot: Pilot, n_instances: int, n_seeds: int, replicates: int,
                rng: np.random.Generator) -> np.ndarray:
    """``[replicates]`` p-values of the paired test on designs resampled from ``pilot``."""
    out = np.empty(replicates)
    chunk = max(1, CHUNK_CELLS // max(1, n_instances * n_seeds))
    for start in range(0, replicates, chunk):
        r = min(chunk, replicates - start)
        inst = rng.integers(0, pilot.n_instances, size=(r, n_instances))               # [r, n]
        seed = (rng.random((r, n_instances, n_seeds)) * pilot.counts[inst][..., None]).astype(int)  # [r, n, k]
        a = pilot.a[inst[..., None], seed]                                              # [r, n, k]
        b = pilot.b[inst[..., None], seed]
        if pilot.binary:
            a, b = a > 0.5, b > 0.5
            out[start:start + r] = mcnemar_p((a & ~b).sum(axis=(1, 2)), (~a & b).sum(axis=(1, 2)))
        else:
            diffs = (a - b).mean(axis=2)                                                # [r, n]
            # an instance drawn twice (or +x next to -x) ties; a new experiment's instances do not:
            # break such ties at random, so that Wilcoxon's exact test applies as it would on new data
            out[start:start + r] = wilcoxon_p(diffs * (1 + 1e-9 * rng.uniform(-1, 1, diffs.shape)))
    return out


def estimate_power(pilot: Pilot, n_instances: int, n_seeds: int = 1, alpha: float = ALPHA,
                   replicates: int = 1000, seed: int = 0) -> PowerEstimate:
    """Power of the paired test at ``n_instances`` x ``n_seeds`` (module docstring); deterministic in ``seed``."""
    require(pilot.n_instances >= 2, f"a power estimate needs a pilot of at least 2 paired instances, got "
                                    f"{pilot.n_instances}")
    require(n_instances >= 1 and n_seeds >= 1 and replicates >= 1,
            f"n_instances, n_seeds and replicates must be >= 1, got {n_instances}, {n_seeds}, {replicates}")
    p = simulated_p(pilot, n_instances, n_seeds, replicates, np.random.default_rng(seed))
    hits = int((p < alpha).sum())
    lo, hi = wilson(hits, replicates)
    return PowerEstimate(n_instances, n_seeds, hits / replicates, lo, hi, replicates)


def instances_needed(pilot: Pilot, n_seeds: int = 1, target: float = TARGET_POWER, alpha: float = ALPHA,
                     replicates: int = 1000, seed: int = 0, n_max: int = 2000) -> int | None:
    """Smallest ``n`` (paired instances) whose estimated power reaches ``target``; None above ``n_max``.

    Doubling from 2, then bisection between the last two sizes; every size is estimated with the
    same ``seed`` (common random numbers), so the answer is deterministic.
    """
    def power(n: int) -> float:
        return estimate_power(pilot, n, n_seeds, alpha, replicates, seed).power

    low, high = 1, 2
    while power(high) < target:
        if high >= n_max:
            return None
        low, high = high, min(2 * high, n_max)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if power(mid) >= target else (mid, high)
    return high


def wilson(hits: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval of a binomial share."""
    share = hits / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def pair_power(pairs: pd.DataFrame, binary: bool, alpha: float = ALPHA, replicates: int = 500,
               seed: int = 0, n_max: int = 2000) -> dict[str, float | int | None | str]:
    """Power of one comparison at its own design, and the paired instances needed for 80%.

    Returns ``{"power", "power_lo", "power_hi", "power_n", "power_k", "n_for_80", "power_n_max",
    "power_words"}`` (``n_for_80`` None: more than ``power_n_max``);
    ``power_k`` is the pilot's examinations per instance, rounded (at least 1).
    """
    pilot = pilot_from_pairs(pairs, binary)
    if pilot.n_instances < 2:
        return {"power": float("nan"), "power_words": "Power not estimated: fewer than 2 paired instances."}
    k = max(1, int(round(pilot.seeds_per_instance)))
    estimate = estimate_power(pilot, pilot.n_instances, k, alpha, replicates, seed)
    needed = instances_needed(pilot, k, TARGET_POWER, alpha, replicates, seed, n_max)
    return {"power": estimate.power, "power_lo": estimate.lo, "power_hi": estimate.hi,
            "power_n": pilot.n_instances, "power_k": k, "n_for_80": needed, "power_n_max": n_max,
            "power_words": power_words(estimate, needed, n_max, alpha)}


def power_words(estimate: PowerEstimate, needed: int | None, n_max: int, alpha: float = ALPHA) -> str:
    """A plain-words sentence: is this comparison under-powered, and what would be enough?"""
    seeds = f"{estimate.n_seeds} seed{'s' if estimate.n_seeds > 1 else ''}"
    design = f"{estimate.n_instances} paired instances x {seeds}"
    share = format_interval(estimate.power, estimate.lo, estimate.hi, digits=0, percent=True)
    if needed is None:
        enough = (f"even {n_max} paired instances would not reach 80% (the difference seen here is too small "
                  f"or absent)")
    else:
        enough = f"about {needed} paired instances at {seeds} reach 80%"
    if estimate.power >= TARGET_POWER:
        return (f"Power: adequate; with {design} a difference as large as the one seen here is detected at "
                f"{alpha:.0%} in {share} of resampled repetitions ({enough}).")
    return (f"Power: under-powered; with {design} a difference as large as the one seen here is detected at "
            f"{alpha:.0%} in only {share} of resampled repetitions; {enough}.")
