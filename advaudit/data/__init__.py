"""Datamodules over in-memory splits (``advaudit.data.base.ArrayDataModule``, with a LightningDataModule's loaders
but no Lightning), dataset readers and bias injection. The package imports nothing itself."""
