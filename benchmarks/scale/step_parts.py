"""Where a worst-case examination's CPU time goes, part by part: the examination's own functions wrapped with
``time.process_time`` clocks (no profiler), for one job or one shard of a split (``--shards K --shard i``), one
thread. Parts nest (``examine_step`` holds ``_score``, which holds the forward passes and the rendering), so they
do not add up. Run it with ``PYTHONPATH`` at a checkout to time that revision's code (the same-time check of two
revisions: one run of each under one lock)::

    /work/coord/quiet env PYTHONPATH=$PWD .venv/bin/python benchmarks/scale/step_parts.py --budget 400
    /work/coord/quiet env PYTHONPATH=$PWD .venv/bin/python benchmarks/scale/step_parts.py --budget 400 --shards 8 --shard 0
"""

from __future__ import annotations

import argparse
import collections
import functools
import tempfile
import time
from pathlib import Path
from typing import Any

# (module, owner inside it or "", function): the parts of an examination's step worth a clock
PARTS = [("advaudit.audits.worst_case", "", "prepare"), ("advaudit.audits.worst_case", "", "examine_step"),
         ("advaudit.audits.worst_case", "", "_score"), ("advaudit.audits.worst_case", "", "append_jsonl"),
         ("advaudit.audits.worst_case", "", "record_fresh_conditions"),
         ("advaudit.examiners.rl", "RLExaminer", "ask"), ("advaudit.examiners.rl", "RLExaminer", "tell"),
         ("advaudit.examiners.rl", "BatchedLSTMPolicy", "_sample"),
         ("advaudit.worlds.validity", "ValidityJudge", "render_geometric"),
         ("advaudit.worlds.validity", "ValidityJudge", "reference_verdicts"),
         ("advaudit.models.targets.target", "TorchTarget", "predict_proba")]


def clocked(parts: list[tuple[str, str, str]]) -> tuple[collections.Counter, collections.Counter]:
    """Wrap each part in a CPU clock; returns the seconds and the calls per part (filled as the run goes)."""
    import importlib

    seconds, calls = collections.Counter(), collections.Counter()
    for module, owner, name in parts:
        holder = importlib.import_module(module)
        holder = getattr(holder, owner) if owner else holder
        function = getattr(holder, name)

        @functools.wraps(function)
        def timed(*args: Any, _f: Any = function, _n: str = name, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return _f(*args, **kwargs)
            finally:
                seconds[_n] += time.process_time() - start
                calls[_n] += 1

        setattr(holder, name, timed)
    return seconds, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=400, help="queries per instance")
    parser.add_argument("--instances", type=int, default=80)
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--shard", type=int, default=0)
    args = parser.parse_args()
    start = time.process_time()
    import advaudit.registry  # noqa: F401  (registers the schemas)
    import advaudit.audits.worst_case as worst_case
    from advaudit.runtime import configure_memory, configure_threads
    from hydra import compose, initialize_config_dir

    imports = time.process_time() - start
    checkout = Path(worst_case.__file__).parents[2]  # the revision PYTHONPATH chose: its code, configs and demo target
    configure_threads(1)
    configure_memory("keep")
    seconds, calls = clocked(PARTS)
    out = Path(tempfile.mkdtemp(prefix="step_parts_"))
    overrides = ["audit=worst_case", "examiner=rl", f"audit.n_instances={args.instances}", f"audit.budget={args.budget}",
                 f"target={checkout / 'advaudit/demo/checkpoints/control.pt'}", "seed=0", "threads=1", "logger=none",
                 f"audit.shards={args.shards}", f"audit.shard={args.shard}", f"paths.output_dir={out}",
                 f"paths.root_dir={out}"]
    with initialize_config_dir(str(checkout / "conf"), version_base="1.3"):
        cfg = compose("examine", overrides)
    start = time.process_time()
    worst_case.run(cfg)
    print(f"{args.instances} instances x {args.budget} queries, shard {args.shard} of {args.shards}, code at "
          f"{checkout}: imports {imports:.2f} CPU s, run {time.process_time() - start:.2f}")
    for name, value in seconds.most_common():
        print(f"  {name:24s} {value:8.2f} s  ({calls[name]} calls)")


if __name__ == "__main__":
    main()
