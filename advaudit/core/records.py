"""Results on disk first: JSON written atomically, JSONL appended as results come."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import torch


def to_plain(value: Any) -> Any:
    """Convert tensors / numpy values / paths (nested) to JSON-ready Python data (NaN -> None)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().tolist()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON atomically (write to a temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(to_plain(obj), indent=2, sort_keys=False))
    tmp.replace(path)
    return path


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def append_jsonl(path: str | Path, records: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> None:
    """Append one record or several as JSON lines, flushed and fsynced (safe against a kill)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(records, Mapping):
        records = [records]
    lines = "".join(json.dumps(to_plain(r)) + "\n" for r in records)
    with open(path, "a") as handle:
        handle.write(lines)
        handle.flush()
        os.fsync(handle.fileno())


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read JSON lines; a torn last line (from a kill mid-write) is ignored. Missing file -> []."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out
