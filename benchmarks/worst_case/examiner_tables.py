"""The examiner-reproduction tables of docs/results/worst_case/worst-case-paper.md, computed from the run dirs of
benchmarks/worst_case/examiner_reproductions.sh (``<OUT>/<name>_<examiner>_s<seed>``), from steps.jsonl only.

Metrics, per run, at T iterations (T policy updates of q for RL and random search with q = 32;
T proposals for BO with q = 1), i.e. at query budget b = T * q:

- ``E_T`` (the paper's Algorithm 1, ``E = 1/N sum_i l_i^T``): mean over instances of the mean
  true-class probability of the proposals of iteration T (for T = 0: the first iteration);
- ``worst``: mean over instances of the lowest true-class probability among the first b proposals
  (valid ones only where steps.jsonl records ``valid``).

Each cell: mean over seeds [95% bootstrap interval over seeds] (advaudit.core.intervals).

    .venv/bin/python benchmarks/worst_case/examiner_tables.py outputs/repro
    .venv/bin/python benchmarks/worst_case/examiner_tables.py outputs/pw --names examine_control --iterations 0 50 100
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from advaudit.audits import examiner_metrics as metrics
from advaudit.core.records import read_json, read_jsonl
from advaudit.report.concentration import Region, run_concentration
from advaudit.core.intervals import format_summary, mean_with_ci

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


def worst(steps: dict[int, list[dict]], queries: int, strength: bool = False) -> float:
    """Mean over instances of the lowest (``strength``: highest) true-class probability among the valid
    proposals of the first ``queries`` (at least one), as the audit computes it
    (:func:`advaudit.audits.examiner_metrics.worst`)."""
    true_prob, valid, _ = _arrays(steps)
    return float(np.nanmean(metrics.worst(true_prob, valid, queries, strength)))


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
    return format_summary(stats, digits)


def metric_table(groups: dict[tuple[str, str], list[Path]], names: list[str], iterations: list[int],
                 title: str, strength: bool = False) -> list[str]:
    """E_T at each T and worst (``strength``: best) at the last T, for each (name, examiner) group present."""
    extreme = "best" if strength else "worst"
    lines = [f"### {title}", "", "| run | examiner | seeds | " + " | ".join(f"E_T @ T={t}" for t in iterations)
             + f" | {extreme} @ T={iterations[-1]} |", "|---|---|---|" + "---|" * (len(iterations) + 1)]
    for name in names:
        for examiner in ("rl", "bo", "random", "tpe", "cmaes"):
            dirs = groups.get((name, examiner))
            if not dirs:
                continue
            loaded = [per_instance_steps(d) for d in dirs]
            q = len(next(iter(loaded[0].values()))[0]["true_prob"])
            available = min(len(next(iter(s.values()))) for s in loaded)
            cells = [cell([e_t(s, t) for s in loaded]) if t <= available else "—" for t in iterations]
            final = cell([worst(s, iterations[-1] * q, strength) for s in loaded], 4) if iterations[-1] <= available else "—"
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


def late_proposals(run_dir: Path, keep: list[int], bounds: list[tuple[str, float, float]],
                   last: int = 64) -> dict[int, np.ndarray]:
    """``{instance: u [last, C]}``: the last ``last`` proposals of each instance on the factors ``keep``,
    scaled to [0, 1] by the factor bounds."""
    low = np.array([bounds[i][1] for i in keep])
    width = np.array([bounds[i][2] - bounds[i][1] for i in keep])
    out = {}
    for instance, records in per_instance_steps(run_dir).items():
        s = np.concatenate([np.asarray(r["s"], dtype=np.float64) for r in records])[-last:, keep]
        out[instance] = (s - low) / width
    return out


def energy_distance(a: np.ndarray, b: np.ndarray, circular: np.ndarray) -> float:
    """Energy distance between two proposal sets ``a [n, C]`` and ``b [m, C]`` in [0, 1]^C:
    ``2 E|X - Y| - E|X - X'| - E|Y - Y'|`` (Székely & Rizzo), Euclidean, with the difference of a
    ``circular`` factor (an angle spanning a full turn) wrapped to ``min(d, 1 - d)``. 0 for equal
    distributions; it grows as they move apart."""
    def mean_distance(x: np.ndarray, y: np.ndarray) -> float:
        d = np.abs(x[:, None, :] - y[None, :, :])
        d = np.where(circular, np.minimum(d, 1 - d), d)
        return float(np.sqrt((d ** 2).sum(-1)).mean())

    return 2 * mean_distance(a, b) - mean_distance(a, a) - mean_distance(b, b)


def order_table(groups: dict[tuple[str, str], list[Path]], names: list[str], random_name: str,
                last: int = 64) -> list[str]:
    """Sec. 4.5: do the two factor orders converge to the same weaknesses?

    Per examined instance (a seed selects the instances, so runs of the two orders with the same seed
    examine the same ones), the energy distance between the last ``last`` proposals of the two orders;
    the control is the same distance between *different* instances of the same runs (how far apart two
    weaknesses that are not the same lie), and the reference is the distance from each order's late
    proposals to random search's for that instance (not searching at all). Each cell: mean over
    (seed, instance) units [95% bootstrap interval over them]: each unit is an independent examination."""
    seeded = {name: {int(RUN.match(d.name)["seed"]): d for d in groups.get((name, "rl")) or []} for name in names}
    randoms = {int(RUN.match(d.name)["seed"]): d for d in groups.get((random_name, "random")) or []}
    seeds = sorted(set.intersection(*(set(runs_) for runs_ in seeded.values())))
    if not seeds:
        return []
    config = read_json(seeded[names[0]][seeds[0]] / "result.json").get("config") or {}
    from advaudit.report.concentration import factor_bounds

    bounds = factor_bounds(config)
    fixed = set((config.get("audit") or {}).get("fixed_random") or [])
    keep = [i for i, (n, lo, hi, _) in enumerate(bounds) if hi > lo and n not in fixed]
    circular = np.array([bounds[i][3] for i in keep])
    same, other, to_random = [], [], []
    for seed in seeds:
        a, b = (late_proposals(seeded[name][seed], keep, bounds, last) for name in names)
        r = late_proposals(randoms[seed], keep, bounds, last) if seed in randoms else {}
        instances = sorted(set(a) & set(b))
        for i in instances:
            same.append(energy_distance(a[i], b[i], circular))
            other.append(float(np.mean([energy_distance(a[i], b[j], circular) for j in instances if j != i])))
            if i in r:
                to_random.append((energy_distance(a[i], r[i], circular) + energy_distance(b[i], r[i], circular)) / 2)
    lines = [f"### Sec. 4.5: energy distance between late proposals (the last {last} per instance; 0 = same distribution)", "",
             f"Seeds {seeds}; factors {[bounds[i][0] for i in keep]} scaled to [0, 1], angles wrapped.", "",
             "| compared | (seed, instance) units | energy distance |", "|---|---|---|",
             f"| {names[0]} vs {names[1]}, same instance | {len(same)} | {cell(same)} |",
             f"| {names[0]} vs {names[1]}, different instances (control) | {len(other)} | {cell(other)} |"]
    if to_random:
        lines.append(f"| each order vs random search, same instance | {len(to_random)} | {cell(to_random)} |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the OUT folder of benchmarks/worst_case/examiner_reproductions.sh")
    parser.add_argument("--names", nargs="+", default=None,
                        help="only one E_T table for these run names (e.g. examine_control of "
                             "benchmarks/worst_case/planted_weakness.sh), at --iterations")
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
    lines += metric_table(groups, ["sec45_lights_first", "sec45_camera_first"], [0, 100, 300, 500], "Sec. 4.5 (RL orders)")
    lines += order_table(groups, ["sec45_lights_first", "sec45_camera_first"], "table2_resnet18")
    lines += metric_table(groups, ["sec46"], [0, 100, 300, 500], "Sec. 4.6 (strength: the examiner maximises)",
                          strength=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
