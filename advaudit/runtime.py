"""Process-wide runtime settings decided once at start-up: threads, seeds, device.

On a small CPU machine, torch intra-op threads plus BLAS/OpenMP pools oversubscribe the cores and
make batched GP fits 10x slower; so thread counts are set here, in one place, before any work.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

_BLAS_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def configure_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads and cap BLAS/OpenMP pools; returns the torch thread count.

    ``threads=None`` uses every core for torch and one thread for BLAS pools (the fastest setting
    measured on the 2-core machine for convolution training).
    """
    n = int(threads) if threads else (os.cpu_count() or 1)
    torch.set_num_threads(max(1, n))
    for var in _BLAS_ENV:
        os.environ.setdefault(var, "1")
    try:
        from threadpoolctl import threadpool_limits  # optional: without it, the environment variables above

        threadpool_limits(1)
    except Exception:  # threadpoolctl is optional
        pass
    return torch.get_num_threads()


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (CPU and CUDA) with ``seed``."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(device: str | None = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else CPU; anything else is passed to ``torch.device``."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of ``module``'s first parameter or buffer (CPU for a module with neither)."""
    for tensor in list(module.parameters()) + list(module.buffers()):
        return tensor.device
    return torch.device("cpu")
