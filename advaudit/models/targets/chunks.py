"""Run a model that takes exactly ``batch`` inputs on any number of them: the one chunk-and-pad loop.

A ``torch.export`` program exported for a fixed batch and an ONNX graph with a fixed batch dimension
both take exactly ``batch`` inputs a call. :func:`in_fixed_batches` feeds them chunks of that size,
the last one padded by repeating its last input, and drops the padding's outputs; it works on torch
tensors and numpy arrays alike.
"""

from __future__ import annotations

from typing import Callable, TypeVar

import numpy as np
import torch
from torch import Tensor

Rows = TypeVar("Rows", Tensor, np.ndarray)


def pad_rows(x: Rows, pad: int) -> Rows:
    """``x`` ``[B, ...]`` with its last row repeated ``pad`` more times -> ``[B + pad, ...]``."""
    if pad <= 0:
        return x
    if isinstance(x, Tensor):
        return torch.cat([x, x[-1:].expand(pad, *x.shape[1:])])
    return np.concatenate([x, np.repeat(x[-1:], pad, 0)])


def in_fixed_batches(run: Callable[[Rows], Rows], x: Rows, batch: int) -> Rows:
    """``run`` (which takes exactly ``batch`` inputs ``[batch, ...]`` -> ``[batch, M]``) on ``x`` ``[B, ...]``
    chunk by chunk, the last chunk padded (:func:`pad_rows`) -> ``[B, M]``."""
    n = len(x)
    padded = pad_rows(x, (-n) % batch)
    outs = [run(padded[start:start + batch]) for start in range(0, len(padded), batch)]
    joined = torch.cat(outs) if isinstance(x, Tensor) else np.concatenate(outs)
    return joined[:n]
