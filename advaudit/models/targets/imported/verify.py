"""No silent substitution: check the model an audit will measure before it measures it.

:func:`verify_target` runs a probe batch through the finished target (the input shape runs, the
outputs are finite probabilities over the target's classes). :func:`logit_gap` compares two models
that should be the same (the user's module and the one rebuilt from a file) on the same probe batch;
:func:`require_same_model` refuses a difference with the largest logit gap named.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from advaudit.errors import AdvauditError, clipped, require


def probe_batch(shape: list[int] | tuple[int, ...], n: int = 8, seed: int = 0) -> Tensor:
    """``[n, *shape]`` uniform inputs in ``[0, 1]`` (the raw range of every advaudit image dataset)."""
    return torch.rand(n, *shape, generator=torch.Generator().manual_seed(seed))


def verify_target(target: Any, probe: Tensor | None = None) -> None:
    """Refuse a target whose probe batch does not give ``[n, K]`` finite probabilities summing to one."""
    probe = probe_batch(target.input_shape) if probe is None else probe
    try:
        probs = target.predict_proba(probe, context="the probe batch that checks the imported model")
    except AdvauditError:
        raise
    except Exception as error:  # noqa: BLE001 - a model that fails on its own input shape is a config problem
        raise AdvauditError(f"the target does not run on a probe batch of shape {list(probe.shape)}: "
                            f"{clipped(error)}; check target.input_shape") from None
    require(tuple(probs.shape) == (len(probe), target.num_classes), f"the target gave probabilities of shape "
            f"{list(probs.shape)} for {len(probe)} inputs and {target.num_classes} classes")
    require(bool(torch.allclose(probs.sum(1), torch.ones(len(probe)), atol=1e-3)),
            "the target's probabilities do not sum to 1; set target.outputs (logits, probabilities or log_probabilities)")


def logit_gap(first: Any, second: Any, probe: Tensor) -> float:
    """The largest absolute difference of the two targets' scores (``logits``) on ``probe``."""
    with torch.no_grad():
        a = first.logits(probe.to(first.device)).float().cpu()
        b = second.logits(probe.to(second.device)).float().cpu()
    require(a.shape == b.shape, f"the two models give scores of shapes {list(a.shape)} and {list(b.shape)}")
    return float((a - b).abs().max())


def require_same_model(user: Any, rebuilt: Any, probe: Tensor, tolerance: float, what: str) -> float:
    """Refuse unless ``rebuilt`` gives ``user``'s scores on ``probe`` within ``tolerance * (1 + max |logit|)``."""
    gap = logit_gap(user, rebuilt, probe)
    with torch.no_grad():
        scale = float(user.logits(probe.to(user.device)).abs().max())
    if not gap <= tolerance * (1.0 + scale):
        raise AdvauditError(f"{what} is not the model you gave: on a probe batch of {len(probe)} inputs their logits "
                            f"differ by up to {gap:.4g} (tolerance {tolerance * (1.0 + scale):.3g})")
    return gap
