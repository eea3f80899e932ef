"""Paired comparison of checkpoints from any audit's result records (``python -m advaudit.compare``)."""

from advaudit.compare.report import compare_records, compare_runs

__all__ = ["compare_records", "compare_runs"]
