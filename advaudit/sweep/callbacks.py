"""What happens when a multirun ends: compare the checkpoints, list failed jobs, exit non-zero.

Configured in ``conf/hydra/default.yaml`` as ``hydra.callbacks.sweep_end``. A failed job has
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

import logging
import sys
from functools import partial
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from advaudit.compare.gate import run_gate
from advaudit.audits.merging import merge_sweep
from advaudit.audits.shards import SHARD_FILE
from advaudit.compare.records import discover_runs
from advaudit.compare.render.wandb import log_comparison
from advaudit.compare.report import compare_records
from advaudit.core.records import write_json
from advaudit.models.targets.tracking import declare_comparison_inputs
from advaudit.errors import AdvauditError

log = logging.getLogger("advaudit.sweep")


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
        sweep_dir = Path(str(config.hydra.sweep.dir))
        for merged in merge_sweep(sweep_dir):  # sharded audits (audit.shards): one run each
            log.info("merged the shards of one audit into %s", merged)
        try:
            records = discover_runs([sweep_dir])
        except AdvauditError:
            log.warning("multirun in %s left no result.json and no job folder", sweep_dir)
            return
        gated = 0
        whole = [r for r in records if not (r.run_dir / SHARD_FILE).exists()]  # shards count in their merge
        if self.compare and any(r.ok and r.audit not in (None, "train") for r in whole):
            gated = self._compare(whole, sweep_dir, config)
        failures = [r for r in records if not r.ok]
        if failures:
            report_failures(failures, sweep_dir, len(records))
            if self.fail_on_error:
                sys.exit(2 if all(r.error_kind == "user" for r in failures) and gated != 1 else 1)
        if gated:
            sys.exit(gated)

    def _compare(self, records: list[Any], sweep_dir: Path, config: DictConfig) -> int:
        """Write the comparison (and the gate's verdict); the gate's exit code, 0 without a gate."""
        try:
            summary = compare_records(records, sweep_dir / "comparison", replay=self.replay)
        except Exception as error:  # the comparison must never hide the sweep's own outcome
            log.warning("comparison of %s failed: %s", sweep_dir, error)
            return 1 if self.gate is not None else 0  # a gate that could not judge does not pass
        log.info("comparison of %d runs: %s", summary["runs"], summary["files"]["md"])
        if self.wandb:
            try:
                log_comparison(summary, sweep_dir / "comparison", config, sweep_id=sweep_dir.name,
                               declare_inputs=partial(declare_comparison_inputs, records=records))
            except Exception as error:
                log.warning("logging the comparison to W&B failed: %s", error)
        if self.gate is None:
            return 0
        try:
            return run_gate(summary, sweep_dir / "comparison", str(self.gate), float(self.margin))
        except AdvauditError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2


def report_failures(failures: list[Any], sweep_dir: Path, total: int) -> Path:
    """Log one line per failed job and write ``<sweep dir>/failures.json``."""
    path = write_json(sweep_dir / "failures.json", [
        {"run_dir": str(r.run_dir), "target": r.target, "seed": r.seed, "error_kind": r.error_kind, "error": r.error}
        for r in failures])
    lines = [f"{len(failures)} of {total} jobs failed (listed in {path}):"]
    lines += [f"  {r.run_dir.name}: [{r.error_kind}] {r.error}" for r in failures]
    message = "\n".join(lines)
    log.error(message)
    print(message, file=sys.stderr)
    return path
