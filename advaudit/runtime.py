"""Process-wide runtime settings decided once at start-up: threads, memory, seeds, device.

On a small CPU machine, torch intra-op threads plus BLAS/OpenMP pools oversubscribe the cores and
make batched GP fits 10x slower; so thread counts are set here, in one place, before any work. The same
holds for memory: glibc's ``malloc`` gives large freed blocks back to the system, so every batch faults its
activations' pages in afresh (18.5 million minor faults, 53 s of system time, in a 154 s random-search
examination of 80 instances); :func:`configure_memory` keeps them for reuse.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import random

import numpy as np
import torch

_BLAS_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
MEMORY_CHOICES = ("keep", "release")


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


def keep_freed_memory() -> bool:
    """Make this process's ``malloc`` (glibc) keep freed memory for reuse; ``False`` where it is not glibc.

    No block is given its own ``mmap`` (``M_MMAP_MAX = 0``: those are unmapped on ``free``) and the heap is
    never trimmed (``M_TRIM_THRESHOLD = -1``), so each batch reuses the pages of the last one instead of
    faulting fresh zeroed pages in; the process holds its peak memory (a few batches' tensors) until it ends.
    """
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl without mallopt)
        return False
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, -1))


def configure_memory(memory: str = "keep") -> bool:
    """``keep``: :func:`keep_freed_memory` (returns whether it took); ``release``: leave glibc's default (large
    freed blocks go back to the system at once; ``False``). Results do not depend on it, only time and the
    memory the process holds: an examination's records are the same bits either way."""
    if memory not in MEMORY_CHOICES:
        raise ValueError(f"memory={memory!r}: choose one of {', '.join(MEMORY_CHOICES)}")
    return keep_freed_memory() if memory == "keep" else False


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
