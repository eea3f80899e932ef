"""Do the examiner's worst cases keep their label? Measured per candidate world box and check.

Validity where it matters (examiner paper Sec. 2.1: S must preserve the label): on a *control*
target (no planted weakness), each candidate (a world box or validity check, as ``examine.py``
overrides) is examined with each examiner at its default settings, and an independent strong judge
(``audit.judge``: a target trained on the world, never the validity reference and never the target)
names every instance's worst valid case. The figure is the share of worst cases it still classifies
correctly (``examine/judge_correct_worst``); a box whose worst cases keep their label on >= 95% of
instances measures the model, not the ambiguity of S.

    PYTHONPATH=. .venv/bin/python benchmarks/worst_case/label_kept.py --target outputs/pw28/train_control/checkpoints/target.pt \\
        --judge outputs/judge/train_w16_i1000/checkpoints/target.pt --out outputs/label_kept \\
        --candidates default elevation_72 elevation_60 --examiners bo rl --seeds 0 1 2 [--n-instances 40]

Every examination is one ``examine.py`` run under ``--out/<candidate>/<examiner>_s<seed>`` (finished
runs are skipped, an interrupted one resumes: rerun the same command). The table pools the
instances of every seed: the share with a 95% bootstrap interval over examined instances, the
per-seed shares, the judge's accuracy on random conditions of the same box, the share of worst
cases in the views the issue found label-destroying (|camera elevation| > 60 deg or camera distance
> 3.5 m), and E_T. ``--json`` writes the rows. Without ``--judge`` the examinations only run (for
instance while the judge is still training, or to measure a judge inside the validity check,
``--extra audit.validity.reference=<judge A>``, with another, ``benchmarks/worst_case/rejudge.py --judge <judge B>``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from advaudit.core.intervals import format_summary, mean_with_ci
from advaudit.core.records import read_json, write_json


def box(elevation: float = 90, distance: float = 4, sun: float = 0, min_extent: float = 0.1875) -> list[str]:
    """examine.py overrides for the paper's Table-1 box narrowed to |camera elevation| <= ``elevation``
    deg, camera distance in [1.5, ``distance``] m and sun energy in [``sun``, 5] W/m2, with a validity
    size check of ``min_extent`` of the frame side (0.1875 = 6 px at 32 px)."""
    return ["world=shapes_table1", f"world.factors={{camera_elevation:[{-elevation:g},{elevation:g}],"
            f"camera_distance:[1.5,{distance:g}],sun_energy:[{sun:g},5]}}", f"audit.validity.min_extent={min_extent:g}"]


#: named candidates, each a box and check from the paper's Table 1 (``default``: world=shapes as it is)
CANDIDATES: dict[str, list[str]] = {
    "default": [],
    "no_reference": ["audit.validity.reference=null"],  # the default box without the packaged judge in the check
    "table1": ["world=shapes_table1"],
    "table1_distance_4": box(),
    "elevation_72": box(elevation=72),
    "elevation_60": box(elevation=60),
    "elevation_60_distance_3.5": box(elevation=60, distance=3.5),
    "elevation_45_distance_3.5": box(elevation=45, distance=3.5),
    "elevation_60_distance_3.5_sun_1": box(elevation=60, distance=3.5, sun=1),
    "elevation_60_distance_3_sun_1": box(elevation=60, distance=3, sun=1),
    "elevation_45_distance_3.5_sun_1": box(elevation=45, distance=3.5, sun=1),
    "elevation_45_distance_3_sun_1": box(elevation=45, distance=3, sun=1),
    "elevation_30_distance_3.5_sun_1": box(elevation=30, distance=3.5, sun=1),
    "elevation_45_distance_3.5_sun_1_extent_0.3": box(elevation=45, distance=3.5, sun=1, min_extent=0.3),
    "elevation_60_distance_3.5_sun_1_extent_0.3": box(elevation=60, distance=3.5, sun=1, min_extent=0.3),
}
#: examiner overrides at their default settings (budget: the audit's default, 500 queries)
EXAMINERS: dict[str, list[str]] = {"bo": ["examiner=bo"], "rl": ["examiner=rl"], "tpe": ["examiner=tpe"],
                                   "random": ["examiner=random"]}


def run_dir(out: Path, candidate: str, examiner: str, seed: int) -> Path:
    return out / candidate / f"{examiner}_s{seed}"


def examine(target: str, judge: str | None, overrides: list[str], directory: Path, seed: int, n_instances: int,
            extra: list[str]) -> None:
    """One examination (skipped when its result.json says ok)."""
    result = directory / "result.json"
    if result.exists() and read_json(result).get("status") == "ok":
        return
    judged = [f"audit.judge={judge}"] if judge else []
    command = [sys.executable, "examine.py", f"target={target}", *judged, f"seed={seed}",
               f"audit.n_instances={n_instances}", "threads=1", "logger=none", f"hydra.run.dir={directory}",
               *overrides, *extra]
    print("+", " ".join(command), flush=True)
    env = {**os.environ, "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f"{directory.name}.log", "w") as log:
        code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    if code != 0:
        raise SystemExit(f"error: examination failed (exit {code}); see {directory.parent / (directory.name + '.log')}")


def destroying_view(worst_s: dict[str, float]) -> bool:
    """The views the control's worst cases piled into under the paper's box: end-on or far away."""
    return abs(worst_s["camera_elevation"]) > 60 or worst_s["camera_distance"] > 3.5


def summarise(runs: list[Path], seed: int = 0) -> dict[str, Any]:
    """Pooled judge verdicts of ``runs`` (one result.json each) with a bootstrap interval over instances."""
    verdicts, per_seed, random_right, extreme, e_t = [], [], [], [], []
    for directory in runs:
        result = read_json(directory / "result.json")
        kept = [row["judge_correct"] for row in result["per_instance"] if row.get("judge_correct") is not None]
        verdicts += kept
        per_seed.append(float(np.mean(kept)) if kept else float("nan"))
        random_right.append(result["examine/judge_correct_random"])
        extreme += [destroying_view(row["worst_s"]) for row in result["per_instance"] if row["worst_s"]]
        e_t.append(result["examine/E_T"])
    return {"kept": mean_with_ci(np.asarray(verdicts, dtype=float), seed=seed), "instances": len(verdicts),
            "per_seed": per_seed, "judge_random": float(np.mean(random_right)),
            "destroying_view_share": float(np.mean(extreme)), "E_T": float(np.mean(e_t))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the control target.pt")
    parser.add_argument("--judge", default=None,
                        help="an independent strong judge target.pt; without one the examinations only run "
                             "(judge them later with benchmarks/worst_case/rejudge.py)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--candidates", nargs="+", default=["default"],
                        help=f"named ({', '.join(CANDIDATES)}) or NAME=override;override")
    parser.add_argument("--examiners", nargs="+", default=["bo"], choices=sorted(EXAMINERS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--n-instances", type=int, default=40)
    parser.add_argument("--extra", nargs="*", default=[], help="overrides added to every examination")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    candidates: dict[str, list[str]] = {}
    for spec in args.candidates:
        name, _, overrides = spec.partition("=")
        if overrides:
            candidates[name] = overrides.split(";")
        elif name in CANDIDATES:
            candidates[name] = CANDIDATES[name]
        else:
            raise SystemExit(f"error: unknown candidate {name!r}; use one of {sorted(CANDIDATES)} or NAME=override;...")
    rows = []
    if args.judge:
        print("| candidate | examiner | worst cases the judge names correctly | per seed | judge on random "
              "conditions | worst cases end-on or far | E_T |\n|---|---|---|---|---|---|---|")
    for name, overrides in candidates.items():
        for examiner in args.examiners:
            runs = []
            for seed in args.seeds:
                directory = run_dir(args.out, name, examiner, seed)
                examine(args.target, args.judge, overrides + EXAMINERS[examiner], directory, seed, args.n_instances,
                        args.extra)
                runs.append(directory)
            if not args.judge:
                continue
            row = {"candidate": name, "overrides": overrides, "examiner": examiner, "seeds": args.seeds,
                   **summarise(runs)}
            rows.append(row)
            print(f"| {name} | {examiner} | {format_summary(row['kept'], 3)} (n = {row['instances']}) | "
                  f"{', '.join(f'{v:.2f}' for v in row['per_seed'])} | {row['judge_random']:.3f} | "
                  f"{row['destroying_view_share']:.2f} | {row['E_T']:.3f} |", flush=True)
    if args.json:
        write_json(args.json, rows)


if __name__ == "__main__":
    main()
