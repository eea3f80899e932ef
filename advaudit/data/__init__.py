"""LightningDataModules over in-memory splits, dataset readers and bias injection."""

from advaudit.data.base import ArrayDataModule
from advaudit.data.split import Split

__all__ = ["ArrayDataModule", "Split"]
