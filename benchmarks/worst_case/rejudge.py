"""Judge finished examinations' worst cases with another judge, after the fact.

``benchmarks/worst_case/label_kept.py`` judges worst cases during the examination (``audit.judge``). When the
judge the measurement needs did not exist yet, or one judge sits inside the validity check
(``audit.validity.reference``) and a *second, independent* one must measure it, this script
re-renders every instance's worst valid case from the run's ``result.json`` (the world rebuilt
from the run's config, the instance taken by id: :func:`advaudit.compare.where.replay.render_worst`) and
asks ``--judge``: the share of worst cases it classifies correctly (argmax = true class), pooled
over the runs with a 95% bootstrap interval over instances, and per run; next to it, the judge's
accuracy on uniform random conditions of the same instances in the same box (``--random`` per
instance), its baseline. Also the share over the instances the judge names unchanged (where the world
has identity conditions; a judge that cannot name an instance unchanged cannot say its label was
kept), and per run the instances without a valid worst case (not judged; never silently dropped).

    PYTHONPATH=. .venv/bin/python benchmarks/worst_case/rejudge.py --judge outputs/judge/train_w16_i1000_s1/checkpoints/target.pt \\
        outputs/label_kept/judged_check/bo_s0 outputs/label_kept/judged_check/bo_s1 [...] [--json out.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import torch

from advaudit.compare.records import read_run
from advaudit.compare.where.replay import render_worst
from advaudit.core.intervals import format_summary, mean_with_ci
from advaudit.core.records import write_json
from advaudit.worlds import build_world
from advaudit.worlds.validity import independent_verdicts


def judge_run(run_dir: Path, judge_path: Path, n_random: int, seed: int) -> dict[str, Any]:
    """One examination judged by ``judge_path``: per-instance verdicts on its worst valid cases ``[N]``
    and the judge's accuracy on ``n_random`` uniform random conditions per instance."""
    record = read_run(run_dir)
    config = record.config
    split = str((config.get("audit") or {}).get("selection_split", "val"))
    world = build_world(config["world"])
    z, s, _ = render_worst(world, record, split)  # instances by id [N], worst conditions [N, C]
    random_s = world.random_conditions(len(s), n_random, generator=torch.Generator().manual_seed(seed))
    correct, random_verdicts = independent_verdicts(world, judge_path, z, s, random_s)
    random_accuracy = float(random_verdicts.float().mean())
    named = correct.new_ones(len(s))  # whether the judge names the instance unchanged (where the world can say)
    if hasattr(world, "identity_conditions"):
        named = independent_verdicts(world, judge_path, z, world.identity_conditions(len(s))[:, 0], random_s[:, :1])[0]
    return {"run": str(run_dir), "correct": correct.numpy().astype(float), "random": random_accuracy,
            "named": named.numpy().astype(bool), "without_valid": len(record.per_instance()) - len(s)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="examination run folders (result.json with worst_s)")
    parser.add_argument("--judge", type=Path, required=True, help="the judge's target.pt")
    parser.add_argument("--random", type=int, default=16, help="random conditions per instance for the baseline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    judged = [judge_run(run, args.judge, args.random, args.seed) for run in args.runs]
    pooled = np.concatenate([row["correct"] for row in judged])
    summary = mean_with_ci(pooled, seed=args.seed)
    named = np.concatenate([row["named"] for row in judged])
    given_named = mean_with_ci(pooled[named], seed=args.seed)
    for row in judged:
        print(f"{row['run']}: {row['correct'].mean():.3f} of {len(row['correct'])} worst cases "
              f"({row['without_valid']} instances without a valid one; {row['correct'][row['named']].mean():.3f} of "
              f"the {int(row['named'].sum())} the judge names unchanged; random conditions {row['random']:.3f})")
    print(f"pooled: {format_summary(summary, 3)} (n = {len(pooled)}); of those the judge names unchanged "
          f"{format_summary(given_named, 3)} (n = {int(named.sum())}); judge on random conditions "
          f"{np.mean([row['random'] for row in judged]):.3f}")
    if args.json:
        write_json(args.json, {"judge": str(args.judge), "kept": summary, "instances": len(pooled),
                               "kept_given_named": given_named, "named_unchanged": int(named.sum()),
                               "runs": [{"run": r["run"], "kept": float(r["correct"].mean()), "n": len(r["correct"]),
                                         "random": r["random"], "without_valid": r["without_valid"]} for r in judged]})


if __name__ == "__main__":
    main()
