"""LightningDataModules over in-memory splits (``advaudit.data.base.ArrayDataModule``), dataset readers
and bias injection. The package imports nothing itself, so reading its settings
(:mod:`advaudit.data.settings`) does not import Lightning."""
