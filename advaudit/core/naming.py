"""Short, stable names for checkpoints in tables and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable


def short_name(target: str) -> str:
    """``.../multiruns/2026-01-01_10-00-00/3/checkpoints/target.pt`` -> ``3/target``.

    The run folder (the parent of ``checkpoints/``) and the file stem identify a checkpoint in a
    sweep; epoch checkpoints keep their epoch (``3/epoch=04``).
    """
    path = Path(str(target))
    parts = path.parts
    if "checkpoints" in parts:
        run = parts[parts.index("checkpoints") - 1] if parts.index("checkpoints") > 0 else ""
        return f"{run}/{path.stem}" if run else path.stem
    return f"{path.parent.name}/{path.stem}" if path.parent.name else path.stem


def short_names(targets: Iterable[str]) -> dict[str, str]:
    """Short names for ``targets``, made unique (the full path when two would collide)."""
    targets = list(targets)
    names = {t: short_name(t) for t in targets}
    if len(set(names.values())) < len(names):
        return {t: str(t) for t in targets}
    return names
