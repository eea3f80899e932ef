"""What training reads from a datamodule: the interface of :class:`advaudit.data.base.ArrayDataModule`.

Training code depends on this interface, not on the data package, so the data package (whose
world-rendered datasets sit above the worlds) may sit above the models.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from torch.utils.data import DataLoader


class TrainingData(Protocol):
    """A set-up-able datamodule of labelled items with train/val/test splits."""

    kind: str  # "image" or "tabular"
    class_names: list[str]
    input_shape: Sequence[int]  # one item's shape: [C, H, W] images, [F] table rows
    num_classes: int

    def setup(self, stage: str | None = None) -> None: ...

    def split(self, name: str) -> Any: ...  # a Split: x [N, ...], y [N], attributes {name: [N]}

    def normalization(self) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]: ...

    def train_dataloader(self) -> DataLoader: ...

    def val_dataloader(self) -> DataLoader: ...

    def test_dataloader(self) -> DataLoader: ...
