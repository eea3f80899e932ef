"""An in-memory dataset split: inputs, labels and named per-item attributes; classes by name or index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from advaudit.errors import AdvauditError


@dataclass
class Split:
    """One split held as tensors.

    Attributes:
        x: inputs. Images ``[N, C, H, W]`` float32 in ``[0, 1]``; tables ``[N, F]`` float32 raw units.
        y: labels ``[N]`` int64.
        attributes: named per-item values ``{name: [N]}`` (instance ids, render factors, ...),
            used by bias injection and by audits that group items.
    """

    x: Tensor
    y: Tensor
    attributes: dict[str, Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(f"x has {len(self.x)} items but y has {len(self.y)}")
        for name, values in self.attributes.items():
            if len(values) != len(self.y):
                raise ValueError(f"attribute {name!r} has {len(values)} items, expected {len(self.y)}")

    def __len__(self) -> int:
        return len(self.y)

    def subset(self, index: Tensor) -> "Split":
        """Items at ``index`` (a bool mask ``[N]`` or an int64 index ``[M]``)."""
        return Split(self.x[index], self.y[index], {k: v[index] for k, v in self.attributes.items()})

    @staticmethod
    def concat(parts: list["Split"]) -> "Split":
        """Stack splits with the same attributes along the item dimension."""
        keys = set(parts[0].attributes)
        return Split(
            torch.cat([p.x for p in parts]),
            torch.cat([p.y for p in parts]),
            {k: torch.cat([p.attributes[k] for p in parts]) for k in keys},
        )


def class_index(name_or_index: Any, class_names: list[str]) -> int:
    """Resolve a class given by name or index; the error lists the valid classes."""
    if isinstance(name_or_index, str) and name_or_index in class_names:
        return class_names.index(name_or_index)
    if isinstance(name_or_index, int) or (isinstance(name_or_index, str) and name_or_index.isdigit()):
        index = int(name_or_index)
        if 0 <= index < len(class_names):
            return index
    raise AdvauditError(f"class {name_or_index!r} does not exist; use a name or index from {class_names}")
