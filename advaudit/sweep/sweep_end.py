"""The work of :class:`advaudit.sweep.callbacks.SweepEnd` when a multirun ends (that module's docstring says what
it does). It lives here, imported when a multirun ends, because Hydra builds the callback in every run, a single
one (each shard of a split audit) too, and this module's imports (the comparison's pandas, scipy.stats and
matplotlib) take ~1.5 s."""

from __future__ import annotations

import logging
import sys
from functools import partial
from pathlib import Path
from typing import Any

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


def end_multirun(end: Any, config: DictConfig) -> None:
    """``SweepEnd.on_multirun_end`` (``end``: the callback, with its settings): merge, compare, list failures, exit."""
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
    if end.compare and any(r.ok and r.audit not in (None, "train") for r in whole):
        gated = _compare(end, whole, sweep_dir, config)
    failures = [r for r in records if not r.ok]
    if failures:
        report_failures(failures, sweep_dir, len(records))
        if end.fail_on_error:
            sys.exit(2 if all(r.error_kind == "user" for r in failures) and gated != 1 else 1)
    if gated:
        sys.exit(gated)


def _compare(end: Any, records: list[Any], sweep_dir: Path, config: DictConfig) -> int:
    """Write the comparison (and the gate's verdict); the gate's exit code, 0 without a gate."""
    try:
        summary = compare_records(records, sweep_dir / "comparison", replay=end.replay)
    except Exception as error:  # the comparison must never hide the sweep's own outcome
        log.warning("comparison of %s failed: %s", sweep_dir, error)
        return 1 if end.gate is not None else 0  # a gate that could not judge does not pass
    log.info("comparison of %d runs: %s", summary["runs"], summary["files"]["md"])
    if end.wandb:
        try:
            log_comparison(summary, sweep_dir / "comparison", config, sweep_id=sweep_dir.name,
                           declare_inputs=partial(declare_comparison_inputs, records=records))
        except Exception as error:
            log.warning("logging the comparison to W&B failed: %s", error)
    if end.gate is None:
        return 0
    try:
        return run_gate(summary, sweep_dir / "comparison", str(end.gate), float(end.margin))
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
