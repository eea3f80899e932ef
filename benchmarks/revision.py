"""Load a module of advaudit as it was at another git revision, to time old and new code in one run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType


def module_at_revision(path: str, rev: str) -> ModuleType:
    """The file ``path`` (e.g. ``advaudit/examiners/bo.py``) at git revision ``rev``, imported as a
    temporary module named ``<stem>_at_revision`` (its own imports resolve to the current package)."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, check=True, capture_output=True,
                            text=True).stdout
    name = f"{Path(path).stem}_at_revision"
    file = Path(tempfile.mkdtemp()) / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
