"""What happens when a multirun ends: compare the checkpoints, list failed jobs, exit non-zero.

Configured in ``conf/hydra/default.yaml`` as ``hydra.callbacks.sweep_end``; the work is in
:mod:`advaudit.sweep.sweep_end`. A failed job has
written ``result.json`` with ``"status": "failed"`` (the task wrapper) and returned, so the other
jobs ran; a job killed before it could write one is found by its Hydra folder without a result.
At the end the shards of a sharded audit (``audit.shards``) are merged into
``<sweep dir>/merged/<audit key>/`` (:mod:`advaudit.audits.merging`: an unfinished shard is named with the
command that finishes it) and the comparison
(``advaudit.compare``, of the merged runs in place of their shards) is written into ``<sweep dir>/comparison`` when
the sweep examined checkpoints, ``<sweep dir>/failures.json`` lists the failures, and the process
exits with 2 when every failure was a user error (bad path, bad value) and 1 otherwise, so a
script or CI step running the sweep sees it. With ``gate`` set (a checkpoint name as the comparison
gives it), the comparison is also a regression gate (:mod:`advaudit.compare.gate`): ``gate.xml`` is
written beside the report and the sweep exits 1 when a checkpoint is weaker than that baseline on
the primary question beyond ``margin`` (2 when ``gate`` names no compared checkpoint).
"""

from __future__ import annotations

import importlib
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class SweepEnd(Callback):
    """``on_multirun_end``: comparison, failure list, exit code (module docstring)."""

    def __init__(self, *, compare: bool, replay: bool, fail_on_error: bool, wandb: bool, gate: str | None,
                 margin: float) -> None:
        """The settings and their defaults: ``hydra.callbacks.sweep_end`` in ``conf/hydra/default.yaml``
        (their one declaration)."""
        self.compare = compare
        self.replay = replay
        self.fail_on_error = fail_on_error
        self.wandb = wandb
        self.gate = gate      # baseline checkpoint name; None: no gate
        self.margin = margin  # loss on the primary metric (its units) that still passes

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        # imported when a multirun ends: Hydra builds this callback in every run (each shard of a split audit too),
        # and the work's imports (the comparison's pandas, scipy.stats, matplotlib) take ~1.5 s
        importlib.import_module("advaudit.sweep.sweep_end").end_multirun(self, config)
