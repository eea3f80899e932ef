"""The table of benchmarks/compare/planted_pairs.sh: per planted factor and seed, what `python -m advaudit.compare` said.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/compare/planted_table.py outputs/planted

Reads OUT/compare_<planted>_s<seed>/comparison.json (the worst-case group of the control against the planted
checkpoint) and prints one Markdown row each: the primary verdict, any conflicting secondary metric, the
where section's confirmed region and its strongest per-fifth sentence in the planted factor.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from advaudit.demo.findings import read_answers, read_where

FACTOR = {"roll_narrowed": "camera_roll", "elevation_narrowed": "camera_elevation"}
UNSEEN = {"roll_narrowed": "240-360°", "elevation_narrowed": "-60 to -30° and 30-60°"}


def _short(text: str) -> str:
    """A report sentence without its long parenthesis of numbers after the first clause."""
    return re.sub(r"\s+", " ", text).strip()


def _fifths(fifths: list, planted: str) -> str:
    """Which checkpoint the per-fifth rows name less accurate, and where: the planted one first."""
    if not fifths:
        return "none said"
    parts = []
    for side in sorted({p.weaker for p in fifths}, key=lambda name: name != planted):
        mine = sorted(p.region for p in fifths if p.weaker == side)
        parts.append(f"{side} less accurate at " + ", ".join(f"{lo:g}-{hi:g}" for lo, hi in mine))
    return "; ".join(parts)


def row(path: Path, planted: str, seed: int) -> str:
    comparison = json.loads(path.read_text())
    answers = [a for a in read_answers(comparison) if a.examiner == "rl"]
    located, _ = read_where(comparison)
    if not answers:
        return f"| {planted} | {seed} | no RL group | | | |"
    answer = answers[0]
    verdict = f"{answer.weaker} weaker" if answer.status == "weaker" else f"no verdict ({answer.status})"
    mine = [p for p in located if p.factor == FACTOR[planted]]
    confirmed = next((p for p in mine if p.how == "confirmed"), None)
    fifths = [p for p in mine if p.how == "per fifth"]
    elsewhere = sorted({p.factor for p in located if p.factor != FACTOR[planted]})
    cells = [planted, str(seed), f"{verdict}: {_short(answer.text)}",
             "; ".join(answer.conflicts) or "none",
             _short(confirmed.words) if confirmed else "no region confirmed in " + FACTOR[planted],
             _fifths(fifths, planted), ", ".join(elsewhere) or "none"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--plants", nargs="+", default=list(FACTOR))
    args = parser.parse_args()
    print("| planted | seed | primary answer (RL E_T) | conflicting | where: confirmed on held-out instances | "
          "where: per fifth in the planted factor | other factors located |")
    print("|---|---|---|---|---|---|---|")
    for planted in args.plants:
        for seed in args.seeds:
            path = Path(args.out) / f"compare_{planted}_s{seed}" / "comparison.json"
            print(row(path, planted, seed) if path.exists() else f"| {planted} | {seed} | not run | | | | |")


if __name__ == "__main__":
    main()
