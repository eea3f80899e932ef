"""Import Mitsuba 3 with a working JIT back-end, or fail with a message that says how to fix it.

Mitsuba's CPU variant (``llvm_ad_rgb``) compiles its kernels with the LLVM found at run time.
It needs libLLVM >= 16: with Debian 12's default LLVM 14/15 the first render aborts deep inside
the JIT ("Cannot select: fminimum"). So before importing Mitsuba, point ``DRJIT_LIBLLVM_PATH`` at
a recent libLLVM when one is installed (``apt-get install -y libllvm19``), and refuse to start
when only an old one is.
"""

from __future__ import annotations

import glob
import os
import re
from types import ModuleType

from advaudit.errors import AdvauditError

MIN_LLVM = 16
LLVM_PACKAGE = "libllvm19"
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib")
_FIX = (f"install it with `apt-get install -y {LLVM_PACKAGE}` (or `make` does) and/or set "
        "DRJIT_LIBLLVM_PATH=/usr/lib/x86_64-linux-gnu/libLLVM-19.so")


def _llvm_version(path: str) -> int:
    match = re.search(r"libLLVM[.-](\d+)", os.path.basename(path))
    return int(match.group(1)) if match else 0


def find_libllvm(min_version: int = MIN_LLVM) -> str | None:
    """The newest ``libLLVM-<major>.so`` (major >= ``min_version``) in the usual library folders."""
    found = [p for d in _LIB_DIRS for p in glob.glob(os.path.join(d, "libLLVM*.so*"))]
    good = sorted((p for p in found if _llvm_version(p) >= min_version), key=_llvm_version)
    return good[-1] if good else None


def configure_llvm_path() -> str:
    """Set ``DRJIT_LIBLLVM_PATH`` to a libLLVM >= 16 unless the user set it; returns the path used."""
    given = os.environ.get("DRJIT_LIBLLVM_PATH")
    if given:
        if not os.path.exists(given):
            raise AdvauditError(f"DRJIT_LIBLLVM_PATH={given} does not exist; {_FIX}")
        if 0 < _llvm_version(given) < MIN_LLVM:
            raise AdvauditError(f"DRJIT_LIBLLVM_PATH={given} is LLVM {_llvm_version(given)}, Mitsuba's CPU "
                                f"renderer needs LLVM >= {MIN_LLVM}; {_FIX}")
        return given
    path = find_libllvm()
    if path is None:
        raise AdvauditError(f"Mitsuba's CPU renderer needs libLLVM >= {MIN_LLVM} and none was found; {_FIX}")
    os.environ["DRJIT_LIBLLVM_PATH"] = path
    return path


def variant_for(device: str) -> str:
    """``cuda_ad_rgb`` for a CUDA device, ``llvm_ad_rgb`` otherwise."""
    return "cuda_ad_rgb" if str(device).startswith("cuda") else "llvm_ad_rgb"


def load_mitsuba(device: str = "cpu", threads: int | None = None) -> ModuleType:
    """Import ``mitsuba`` with the variant for ``device`` set (and Dr.Jit's CPU threads capped)."""
    variant = variant_for(device)
    if variant.startswith("llvm"):
        configure_llvm_path()
    try:
        import drjit as dr  # Mitsuba: only the mesh world renders with it
        import mitsuba as mi
    except ImportError as error:
        raise AdvauditError(f"world=meshes renders with Mitsuba 3, which is not installed ({error}); "
                            "run `pip install 'mitsuba>=3.6'`") from error
    try:
        mi.set_variant(variant)
    except Exception as error:  # the JIT back-end could not be initialised
        fix = _FIX if variant.startswith("llvm") else "use device=cpu or install a CUDA driver"
        raise AdvauditError(f"Mitsuba variant {variant} is unavailable ({error}); {fix}") from error
    if threads and variant.startswith("llvm"):
        dr.set_thread_count(int(threads))
    return mi
