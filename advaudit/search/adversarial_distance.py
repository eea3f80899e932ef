"""Adversarial distance (Eq. 5 of the adversarial-distance paper; Eq. 2 of the generalised one).

``AdvDist(x) = D(x, A(M, x)) - F(p_x)`` where ``D`` is the MAE to the item's adversarial (or its
log), ``p_x`` the calibrated confidence and ``F`` a LOWESS of ``D`` on ``p`` fitted on the pool's
items. Items whose attack failed are kept, marked, out of the fit, and ranked last.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from advaudit.search.settings import LowessConf
from advaudit.core.progress import progress
from advaudit.errors import require
from advaudit.search.lowess import lowess_fit


def distance_values(mae: Tensor, log: bool) -> Tensor:
    """``[n]`` MAE or log-MAE; failed attacks (NaN) stay NaN; zero MAE is floored before the log."""
    return mae.double().clamp_min(1e-12).log() if log else mae.double()


def adversarial_distance(distance: np.ndarray, confidence: np.ndarray, settings: LowessConf) -> np.ndarray:
    """``[P]`` AdvDist for one pool: ``distance - lowess(distance ~ confidence)``; NaN where the attack failed."""
    fitted = lowess_fit(distance, confidence, frac=settings.frac, it=settings.it, delta=settings.delta)
    return distance - fitted


def pool_scores(distance: Tensor, confidence: Tensor, pools: Tensor, settings: LowessConf) -> Tensor:
    """AdvDist for every pool ``[R, P]`` (lower = query first; failed attacks get ``+inf``).

    Args:
        distance: ``[n]`` (log-)MAE per eligible item, NaN for failed attacks.
        confidence: ``[n]`` calibrated confidence of the predicted (critical) class.
        pools: ``[R, P]`` item indices.
        settings: the LOWESS settings; ``settings.per_pool`` refits ``F`` on each pool's items (the
            authors' protocol), else ``F`` is fitted once on all items.
    """
    require(distance.shape == confidence.shape, "distance and confidence must both be [n]")
    d, p = distance.double().numpy(), confidence.double().numpy()
    index = pools.numpy()
    if settings.per_pool:
        fits: dict[bytes, np.ndarray] = {}  # a pool's LOWESS depends on its set of items, not on their order
        rows = []
        for row in progress(index, desc="LOWESS per pool", unit="pool"):
            items = np.sort(row)
            key = items.tobytes()
            if key not in fits:  # pools of every eligible item (pool_size clamped to them) are fitted once
                fits[key] = adversarial_distance(d[items], p[items], settings)
            rows.append(fits[key][np.searchsorted(items, row)])
        scores = np.stack(rows)
    else:
        scores = adversarial_distance(d, p, settings)[index]
    return torch.from_numpy(np.nan_to_num(scores, nan=np.inf))
