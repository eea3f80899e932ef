"""Load advaudit code as it was at another git revision, to time old and new code in one run.

The old revision is checked out of git, never kept as a copy in this tree."""

from __future__ import annotations

import atexit
import importlib
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType

_ROOT = Path(__file__).resolve().parents[2]
_PACKAGE = "advaudit"


def package_module_at_revision(module: str, rev: str) -> ModuleType:
    """The module ``module`` (e.g. ``advaudit.faults.search``) of the whole package as it was at git
    revision ``rev``: the package is checked out of git (``git archive``) into a temporary folder and
    imported from there, its own imports resolving to that old package, while the current package
    stays what ``import advaudit`` gives everywhere else.

    The old modules are kept alive by the returned module's references to them; code that imports
    inside a function at call time would see the current package (the old module should import at
    its top, as ``advaudit.faults.search`` does)."""
    archive = subprocess.run(["git", "archive", "--format=tar", rev, _PACKAGE], cwd=_ROOT, check=True,
                             capture_output=True).stdout
    folder = tempfile.mkdtemp(prefix=f"advaudit_{rev}_")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    ours = _take_package_modules()
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(folder)
        _take_package_modules()  # the old package's modules leave sys.modules
        sys.modules.update(ours)


def _take_package_modules() -> dict[str, ModuleType]:
    """Remove the package's modules from ``sys.modules`` and return them."""
    names = [name for name in sys.modules if name == _PACKAGE or name.startswith(_PACKAGE + ".")]
    return {name: sys.modules.pop(name) for name in names}
