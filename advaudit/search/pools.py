"""Pools as in the papers: R random subsets of P items, restricted to confident critical-class
predictions (calibrated confidence > tau). All R pools are one ``[R, P]`` index matrix."""

from __future__ import annotations

import zlib

import numpy as np
import torch
from torch import Tensor

from advaudit.errors import AdvauditError, require


def draw_pools(n_items: int, pool_size: int, replications: int, generator: torch.Generator) -> Tensor:
    """``[R, P]`` int64: each row a random subset (without replacement) of ``range(n_items)``."""
    require(pool_size >= 1 and replications >= 1, f"pool_size={pool_size}, replications={replications} must be >= 1")
    require(pool_size <= n_items, f"pool_size={pool_size} exceeds the {n_items} items available; lower audit.pool_size")
    return torch.rand(replications, n_items, generator=generator).argsort(1)[:, :pool_size]


def eligible(predicted: Tensor, confidence: Tensor, critical_class: int, tau: float) -> Tensor:
    """``[n]`` bool: predicted as the critical class with confidence above ``tau``; clear error if none."""
    mask = (predicted == critical_class) & (confidence > tau)
    if not bool(mask.any()):
        of_class = confidence[predicted == critical_class]
        counts = {f">{t}": int((of_class > t).sum()) for t in (0.5, 0.6, 0.65, 0.7, 0.8, 0.9)}
        raise AdvauditError(f"no item is predicted as the critical class with confidence > {tau}; items predicted "
                            f"as that class by confidence: {counts}; lower audit.tau or pick another audit.critical_class")
    return mask


def chunk_generator(seed: int, method: str, start: int) -> torch.Generator:
    """The random stream of ``method`` on the chunk of pools that starts at pool ``start``: seeded from the run's
    ``seed``, the method's name and ``start`` (numpy's ``SeedSequence`` with them as its spawn key), so what a
    method draws on a chunk does not depend on the other methods, on the chunks before it or on the job that runs
    it (a shard runs its chunks, the merge reads them)."""
    key = np.random.SeedSequence(int(seed) % 2**64, spawn_key=(zlib.crc32(method.encode()), int(start)))
    return torch.Generator().manual_seed(int(key.generate_state(1, np.uint64)[0]))
