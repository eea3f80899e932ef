"""Progress bars for long work: rate and ETA, quiet when stderr is not a terminal and CI is set."""

from __future__ import annotations

import os
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T] | None = None, total: int | None = None, desc: str = "",
             unit: str = "it", **kwargs) -> tqdm:
    """A tqdm bar showing rate (``unit``/s) and ETA; ``ADVAUDIT_PROGRESS=0`` turns it off."""
    asked = bool(kwargs.pop("disable", False))  # popped first: with ADVAUDIT_PROGRESS=0 it was passed twice
    disable = os.environ.get("ADVAUDIT_PROGRESS", "1") == "0" or asked
    return tqdm(iterable, total=total, desc=desc, unit=unit, dynamic_ncols=True, disable=disable,
                smoothing=0.1, **kwargs)
