"""A recipe-level control: one recipe's files split at random into two pretend recipes, compared over their files.

Every file of the recipe was examined once, on the same instances (one examination seed; e.g. the 12 training seeds
of `user_recipes.py --recipes plain --seeds 0 ... 11`, examined by one `examine.py -m` sweep). Each split draws
``--size`` files for "a" and ``--size`` others for "b" (seeded), relabels the runs and compares them with
``advaudit.compare``'s defaults. Any primary verdict, factor named in the why section or cell said in the where
section here is a false positive: the two "recipes" are one.

    PYTHONPATH=. .venv/bin/python benchmarks/compare/recipe_splits.py outputs/recipes/examine_shift_rl \
        outputs/recipes/examine_control_rl --label plain --out outputs/recipes/splits_rl --splits 20 --size 3

Resumable: a split whose comparison.json exists is read, not recomputed. Prints one line per split and a summary,
and writes ``<out>/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from advaudit.compare.labels import checkpoint_source
from advaudit.compare.records import discover_runs
from advaudit.compare.report import compare_records
from advaudit.core.records import read_json


def findings(comparison: dict[str, Any]) -> dict[str, Any]:
    """What a comparison of two pretend recipes said: verdicts, named factors, said cells, confirmed checks."""
    group = comparison["groups"][0]
    why = group.get("why") or {"pairs": []}
    where = group.get("where") or {"sensitivity": {"pairs": []}, "pairs": [], "recipe_checks": []}
    return {"verdict": [a["text"] for a in group.get("answers", []) if a.get("weaker")],
            "why_said": [r["name"] for p in why["pairs"] for r in p["rows"] if r["said"]],
            "why_confirmed": [r["name"] for p in why["pairs"] for r in p["rows"]
                              if (r.get("confirmation") or {}).get("confirmed")],
            "where_said": [r["place"] for r in where["sensitivity"]["pairs"] if r["said"]],
            "where_confirmed": [c.get("words", "") for c in where.get("recipe_checks", []) if c.get("weaker")]
                               + [p["confirmation"]["words"] for p in where["pairs"]
                                  if (p.get("confirmation") or {}).get("weaker")]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("roots", nargs="+", help="the examined runs of one recipe's files")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--size", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default=None, help="only the runs of this checkpoint label (the recipe's name)")
    parser.add_argument("--part", default="0/1", help="I/N: compute only the splits k with k %% N == I (run N such "
                        "processes side by side, then once without --part for the summary)")
    args = parser.parse_args()
    runs = [r for r in discover_runs(args.roots) if r.ok and (args.label is None or r.target == args.label)]
    files = sorted({checkpoint_source(r) for r in runs})
    if len(files) < 2 * args.size:
        raise SystemExit(f"{len(files)} files under {args.roots}; need at least {2 * args.size}")
    draw = random.Random(args.seed)
    part, parts = (int(v) for v in args.part.split("/"))
    rows = []
    for k in range(args.splits):
        chosen = draw.sample(files, 2 * args.size)
        side = {f: "a" for f in chosen[:args.size]} | {f: "b" for f in chosen[args.size:]}
        out = args.out / f"split_{k:02d}"
        if k % parts != part:
            continue
        if not (out / "comparison.json").exists():
            records = [r for r in discover_runs(args.roots) if r.ok and checkpoint_source(r) in side
                       and (args.label is None or r.target == args.label)]
            for record in records:
                record.target, record.label_note = side[checkpoint_source(record)], None
            compare_records(records, out)
        said = findings(read_json(out / "comparison.json"))
        rows.append({"split": k, "a": sorted(f for f in side if side[f] == "a"),
                     "b": sorted(f for f in side if side[f] == "b"), **said})
        print(f"split {k:2d}: verdict {len(said['verdict'])}, why said {said['why_said'] or '-'} "
              f"(confirmed {said['why_confirmed'] or '-'}), where said {len(said['where_said'])}, "
              f"where confirmed {len(said['where_confirmed'])}", flush=True)
    summary = {"splits": len(rows), "with_verdict": sum(bool(r["verdict"]) for r in rows),
               "with_factor_named": sum(bool(r["why_said"]) for r in rows),
               "with_factor_confirmed": sum(bool(r["why_confirmed"]) for r in rows),
               "with_cell_said": sum(bool(r["where_said"]) for r in rows),
               "with_region_confirmed": sum(bool(r["where_confirmed"]) for r in rows), "rows": rows}
    if parts > 1:
        return
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print({k: v for k, v in summary.items() if k != "rows"})


if __name__ == "__main__":
    main()
