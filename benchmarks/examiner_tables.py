"""The examiner-reproduction tables of docs/RESULTS.md, computed from the run dirs of
benchmarks/examiner_reproductions.sh (``<OUT>/<name>_<examiner>_s<seed>``), from steps.jsonl only.

Metrics, per run, at T iterations (T policy updates of q for RL and random search with q = 32;
T proposals for BO with q = 1), i.e. at query budget b = T * q:

- ``E_T`` (the paper's Algorithm 1, ``E = 1/N sum_i l_i^T``): mean over instances of the mean
  true-class probability of the proposals of iteration T (for T = 0: the first iteration);
- ``worst``: mean over instances of the lowest true-class probability among the first b proposals
  (valid ones only where steps.jsonl records ``valid``).

Each cell: mean over seeds [95% bootstrap interval over seeds] (advaudit.report.intervals).

    .venv/bin/python benchmarks/examiner_tables.py outputs/repro
    .venv/bin/python benchmarks/examiner_tables.py outputs/pw --names examine_control --iterations 0 50 100
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from advaudit.audits import examiner_metrics as metrics
from advaudit.report.concentration import Region, run_concentration
from advaudit.report.intervals import mean_with_ci
from advaudit.report.records import read_json, read_jsonl

RUN = re.compile(r"^(?P<name>.+)_(?P<examiner>rl|bo|random|tpe|cmaes)_s(?P<seed>\d+)$")


def per_instance_steps(run_dir: Path) -> dict[int, list[dict]]:
    """steps.jsonl records grouped by instance, in step order."""
    grouped: dict[int, list[dict]] = {}
    for record in sorted(read_jsonl(run_dir / "steps.jsonl"), key=lambda r: r["step"]):
        grouped.setdefault(int(record["instance"]), []).append(record)
    return grouped


def e_t(steps: dict[int, list[dict]], iteration: int) -> float:
    """Mean over instances of the paper's E_T at iteration ``iteration`` (1-based; 0 means the first),
    as the audit computes it (:func:`advaudit.audits.examiner_metrics.e_t`)."""
    true_prob, _, q = _arrays(steps)
    return float(metrics.e_t(true_prob, q, max(iteration, 1) * q).mean())


def worst(steps: dict[int, list[dict]], queries: int) -> float:
    """Mean over instances of the lowest true-class probability among the valid proposals of the first
    ``queries`` (at least one), as the audit computes it (:func:`advaudit.audits.examiner_metrics.worst`)."""
    true_prob, valid, _ = _arrays(steps)
    return float(np.nanmean(metrics.worst(true_prob, valid, queries)))


def _arrays(steps: dict[int, list[dict]]) -> tuple[np.ndarray, np.ndarray, int]:
    """``true_prob`` and ``valid`` ``[N, Q]`` (all valid for records that predate the checks) and q."""
    def stack(key: str) -> np.ndarray:
        return np.stack([np.concatenate([r.get(key) if r.get(key) is not None else [True] * len(r["true_prob"])
                                         for r in records]) for records in steps.values()])

    first = next(iter(steps.values()))[0]
    return stack("true_prob").astype(float), stack("valid").astype(bool), len(first["true_prob"])


def runs(out: Path) -> dict[tuple[str, str], list[Path]]:
    """Finished run dirs grouped by (experiment name, examiner)."""
    grouped: dict[tuple[str, str], list[Path]] = {}
    for run_dir in sorted(out.iterdir()):
        match = RUN.match(run_dir.name)
        if match and (run_dir / "result.json").exists() and (run_dir / "steps.jsonl").exists():
            grouped.setdefault((match["name"], match["examiner"]), []).append(run_dir)
    return grouped


def cell(values: list[float], digits: int = 3) -> str:
    stats = mean_with_ci(values)
    if stats["n"] == 0:
        return "—"
    if stats["n"] == 1:
        return f"{stats['mean']:.{digits}f} (1 seed)"
    return f"{stats['mean']:.{digits}f} [{stats['lo']:.{digits}f}, {stats['hi']:.{digits}f}]"


def metric_table(groups: dict[tuple[str, str], list[Path]], names: list[str], iterations: list[int],
                 title: str) -> list[str]:
    """E_T at each T and worst at the last T, for each (name, examiner) group present."""
    lines = [f"### {title}", "", "| run | examiner | seeds | " + " | ".join(f"E_T @ T={t}" for t in iterations)
             + f" | worst @ T={iterations[-1]} |", "|---|---|---|" + "---|" * (len(iterations) + 1)]
    for name in names:
        for examiner in ("rl", "bo", "random", "tpe", "cmaes"):
            dirs = groups.get((name, examiner))
            if not dirs:
                continue
            loaded = [per_instance_steps(d) for d in dirs]
            q = len(next(iter(loaded[0].values()))[0]["true_prob"])
            available = min(len(next(iter(s.values()))) for s in loaded)
            cells = [cell([e_t(s, t) for s in loaded]) if t <= available else "—" for t in iterations]
            final = cell([worst(s, iterations[-1] * q) for s in loaded], 4) if iterations[-1] <= available else "—"
            lines.append(f"| {name} | {examiner} | {len(dirs)} | " + " | ".join(cells) + f" | {final} |")
    return lines + [""]


def concentration_table(groups: dict[tuple[str, str], list[Path]], name: str, region: Region) -> list[str]:
    lines = [f"### Sec. 4.4: late proposals {region.describe()}, error rates in / out of the region", "",
             "| examiner | seeds | share of the last 64 queries | volume share | error rate in region | error rate outside |",
             "|---|---|---|---|---|---|"]
    for examiner in ("rl", "bo", "random"):
        dirs = groups.get((name, examiner))
        if not dirs:
            continue
        results = [run_concentration(d, region, last=64) for d in dirs]
        lines.append(f"| {examiner} | {len(dirs)} | {cell([r['pooled_share'] for r in results])} | "
                     f"{results[0]['volume_share']:.3f} | {cell([r['error_rate_inside'] for r in results])} | "
                     f"{cell([r['error_rate_outside'] for r in results])} |")
    return lines + [""]


def order_table(groups: dict[tuple[str, str], list[Path]], names: list[str], last: int = 32) -> list[str]:
    """Sec. 4.5: per searched factor, mean ± std of each order's last ``last`` proposals per instance."""
    columns = {}
    factor_names: list[str] = []
    for name in names:
        dirs = groups.get((name, "rl"))
        if not dirs:
            continue
        config = read_json(dirs[0] / "result.json").get("config") or {}
        from advaudit.report.concentration import factor_bounds

        bounds = factor_bounds(config)
        fixed = set((config.get("audit") or {}).get("fixed_random") or [])
        keep = [i for i, (n, lo, hi) in enumerate(bounds) if hi > lo and n not in fixed]
        factor_names = [bounds[i][0] for i in keep]
        late = [np.asarray(r["s"])[:, keep] for d in dirs for records in per_instance_steps(d).values()
                for r in records[-max(1, last // len(records[0]["true_prob"])):]]
        stacked = np.concatenate(late)
        columns[name] = (stacked.mean(0), stacked.std(0))
    if not columns:
        return []
    lines = ["### Sec. 4.5: final proposals per factor (mean ± std)", "",
             "| factor | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for j, factor in enumerate(factor_names):
        lines.append(f"| {factor} | " + " | ".join(f"{m[j]:.3g} ± {s[j]:.3g}" for m, s in columns.values()) + " |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the OUT folder of benchmarks/examiner_reproductions.sh")
    parser.add_argument("--names", nargs="+", default=None,
                        help="only one E_T table for these run names (e.g. examine_control of "
                             "benchmarks/planted_weakness.sh), at --iterations")
    parser.add_argument("--iterations", nargs="+", type=int, default=[0, 50, 100])
    args = parser.parse_args()
    groups = runs(Path(args.out))
    if args.names:
        print("\n".join(metric_table(groups, args.names, args.iterations, "E_T by examiner")))
        return
    lines = []
    lines += metric_table(groups, ["table2_resnet18", "table2_alexnet"], [0, 100, 300, 500], "Table 2")
    lines += metric_table(groups, [f"table3_m{m}" for m in (10, 5, 2, 1)], [0, 100, 200], "Table 3 (T = 200)")
    lines += metric_table(groups, ["sec44"], [0, 100, 250], "Sec. 4.4 (target trained with |elevation| <= 30)")
    if any(name == "sec44" for name, _ in groups):
        lines += concentration_table(groups, "sec44", Region("camera_elevation", -30, 30, outside=True))
    lines += metric_table(groups, ["sec45_lights_first", "sec45_camera_first"], [0, 100, 500], "Sec. 4.5 (RL orders)")
    lines += order_table(groups, ["sec45_lights_first", "sec45_camera_first"])
    lines += metric_table(groups, ["sec46"], [0, 100, 500], "Sec. 4.6 (strength: the examiner maximises)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
