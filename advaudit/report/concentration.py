"""Where an examiner keeps searching: the share of its late proposals inside a region of S.

An examiner that has found a weakness should spend its budget there (the paper's Sec. 4.4: the
examiner "concentrates" on the top and bottom views a target never saw). For a region
``R = {s : low <= s_f <= high}`` on one searched factor ``f`` (or its complement, ``outside``),
this module measures, from a worst-case run's ``steps.jsonl``:

    share_i = |{late proposals of instance i with s in R}| / |{late proposals of instance i}|

where the late proposals are those of the last ``last`` queries (or iterations) of the run, and
compares it with the region's volume share of the searched space,

    volume(R) = |R ∩ [low_f, high_f]| / (high_f - low_f)

(the share a uniform proposal distribution would have: random search's expectation), with random
search on the same target, and with a control target. ``ratio = share / volume``; a ratio of 1 is
no concentration at all. It also gives the error rate (misclassified share, valid proposals only
where steps.jsonl records ``valid``; with a reference judge in the check, on the share sample its
shares of invalid proposals are measured on) of *all* the run's proposals inside and outside the region:
on a random-search run, the paper's Sec. 4.4 check that the planted weakness is real.

Per run: per-instance shares and the pooled share (all late proposals of all instances together),
with a 95% bootstrap interval over instances. Across runs (the CLI): runs are grouped by (target,
examiner); the interval is over the groups' seeds (independent examinations), never over
overlapping resamples of one run.

On a periodic factor (a circle: camera roll, the light's azimuth, the sun's rotations) regions are
arcs: ``low > high`` names the arc from ``low`` up through the seam to ``high`` (``--low 315 --high 45``
is the quarter turn around 0/360 deg, one region), values and bounds are compared modulo the period
(360 deg is 0 deg, ``[-45, 45]`` is the same arc), and its volume share is its length over the period.

``python -m advaudit.report.concentration <run dirs...> --factor camera_elevation --low -30
--high 30 --outside [--last 64 --unit queries] [--control <substring of the control target>]``
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from advaudit.audits.lazy_validity import share_sample
from advaudit.core.plots import plt, save_figure
from advaudit.core.records import read_json, read_jsonl, write_json
from advaudit.errors import require
from advaudit.core.intervals import format_interval, mean_with_ci
from advaudit.worlds import build_world

STEPS_FILE, RESULT_FILE = "steps.jsonl", "result.json"


@dataclass(frozen=True)
class Region:
    """``low <= s[factor] <= high`` (or its complement within the factor's bounds, ``outside``); on a
    periodic factor an arc, which crosses the seam when ``low > high`` (module docstring)."""

    factor: str
    low: float
    high: float
    outside: bool = False

    @property
    def wraps(self) -> bool:
        return self.low > self.high

    def _check(self, periodic: bool) -> None:
        require(periodic or not self.wraps, f"region low={self.low} is above high={self.high} on {self.factor!r}, "
                "which is not periodic (only a full-turn angle wraps); swap them")

    def _arc(self, period: float) -> float:
        """Length of the arc ``low -> high`` (at most one period)."""
        return min(period, self.high - self.low) if not self.wraps else (self.high - self.low) % period

    def contains(self, values: np.ndarray, circle: tuple[float, float] | None = None) -> np.ndarray:
        """Boolean mask ``[...]`` for factor values ``[...]``; ``circle=(bound_low, bound_high)`` when the
        factor is periodic (values compared modulo the period)."""
        self._check(circle is not None)
        if circle is None:
            inside = (values >= self.low) & (values <= self.high)
        else:
            period = circle[1] - circle[0]
            inside = np.mod(values - self.low, period) <= self._arc(period) + 1e-9 * period
        return ~inside if self.outside else inside

    def volume_share(self, bound_low: float, bound_high: float, periodic: bool = False) -> float:
        """Share of the factor's searched range ``[bound_low, bound_high]`` covered by the region (on a
        circle: the arc's length over the period)."""
        require(bound_high > bound_low, f"factor {self.factor!r} is fixed at {bound_low}: it is not searched, "
                "so a region on it measures nothing; pick a searched factor")
        self._check(periodic)
        if periodic:
            overlap = self._arc(bound_high - bound_low) / (bound_high - bound_low)
        else:
            overlap = max(0.0, min(self.high, bound_high) - max(self.low, bound_low)) / (bound_high - bound_low)
        return 1.0 - overlap if self.outside else overlap

    def spans(self, bound_low: float, bound_high: float, periodic: bool = False) -> list[tuple[float, float]]:
        """The region as intervals within ``[bound_low, bound_high]`` (for shading a plot)."""
        if periodic:
            period = bound_high - bound_low
            start = bound_low + np.mod(self.low - bound_low, period)
            stop = start + self._arc(period)
            inside = [(start, min(stop, bound_high))] + ([(bound_low, stop - period)] if stop > bound_high else [])
        else:
            inside = [(max(bound_low, self.low), min(bound_high, self.high))]
        if not self.outside:
            return inside
        out, cursor = [], bound_low
        for a, b in sorted(inside):
            if a > cursor:
                out.append((cursor, a))
            cursor = max(cursor, b)
        return out + ([(cursor, bound_high)] if cursor < bound_high else [])

    def describe(self) -> str:
        across = " across the seam" if self.wraps else ""
        return f"{self.factor} {'outside' if self.outside else 'in'} [{self.low:g}, {self.high:g}]{across}"


def factor_bounds(config: dict[str, Any]) -> list[tuple[str, float, float, bool]]:
    """``[(name, low, high, periodic)]`` of the run's world factors, in the order of ``s`` in steps.jsonl."""
    world_cfg = dict(config["world"])
    if "device" in world_cfg:
        world_cfg["device"] = "cpu"
    return [(f.name, float(f.low), float(f.high), f.periodic) for f in build_world(world_cfg).factors]


def late_window(steps: Sequence[int], q: int, last: int, unit: str) -> int:
    """The first step of the late window: the steps holding the last ``last`` queries (``unit=
    queries``, rounded up to whole steps of ``q``) or the last ``last`` iterations."""
    require(unit in ("queries", "iterations"), f"unit={unit!r}; use queries or iterations")
    require(last >= 1, f"last={last} must be >= 1")
    n_steps = max(steps) + 1
    k = math.ceil(last / q) if unit == "queries" else int(last)
    return max(0, n_steps - k)


def _share_rate(result: dict[str, Any]) -> float:
    """The share sample the run measured its shares of invalid proposals on (1: every query; see
    :mod:`advaudit.audits.lazy_validity`): the error rates over valid proposals use the same queries."""
    return float(result.get("validity_share_sample", 1.0))


def _finished_run(run_dir: Path) -> dict[str, Any]:
    """``<run_dir>/result.json`` of a finished worst-case run (refused in one line otherwise)."""
    require((run_dir / STEPS_FILE).exists(), f"{run_dir} has no {STEPS_FILE}: not a worst-case run dir "
            "(examine.py writes it), or the run has not started")
    require((run_dir / RESULT_FILE).exists(), f"{run_dir} has no {RESULT_FILE}: the examination has not "
            "finished; rerun examine.py with the same hydra.run.dir to resume it")
    result = read_json(run_dir / RESULT_FILE)
    require(result.get("status", "ok") == "ok", f"{run_dir} is a failed run: {result.get('error')}")
    return result


def _tally(records: list[dict[str, Any]], region: Region, column: int, circle: tuple | None, q: int, first: int,
           seed: int, rate: float) -> tuple[dict[int, dict[str, list]], list[float], dict[bool, list]]:
    """From the step records: per instance, whether each proposal from step ``first`` on lies inside
    ``region`` and its true-class probability; the factor's value at those late proposals; and over all
    (valid, share-sampled) proposals whether each was misclassified, keyed by inside the region."""
    per_instance: dict[int, dict[str, list]] = {}
    late_values: list[float] = []
    errors = {True: [], False: []}  # all (valid) proposals: misclassified?, by inside the region
    for r in records:
        in_region = region.contains(np.asarray(r["s"], dtype=np.float64)[:, column], circle)
        valid = r.get("valid") or [True] * len(in_region)
        counted = share_sample([r["instance"]], range(r["step"] * q, r["step"] * q + len(valid)),
                               seed, rate)[0]
        for inside_one, predicted, ok, sampled in zip(in_region.tolist(), r["predicted"], valid, counted):
            if ok and sampled:
                errors[inside_one].append(predicted != r["label"])
        if r["step"] < first:
            continue
        late_values += [float(row[column]) for row in r["s"]]
        entry = per_instance.setdefault(int(r["instance"]), {"inside": [], "true_prob": []})
        entry["inside"].extend(in_region.tolist())
        entry["true_prob"].extend(r["true_prob"])
    return per_instance, late_values, errors


def run_concentration(run_dir: str | Path, region: Region, last: int = 64, unit: str = "queries",
                      bounds: list[tuple] | None = None) -> dict[str, Any]:
    """Concentration of one worst-case run (a directory with ``steps.jsonl`` and ``result.json``).

    Returns ``{"run_dir", "target", "examiner", "seed", "q", "volume_share", "pooled_share",
    "ratio", "share_mean", "share_lo", "share_hi" (over instances), "late_true_prob",
    "late_proposals", "late_values" (the factor's value at each late proposal, for the plot),
    "factor_bounds" ``[low, high]``, "periodic", "per_instance": [{"instance", "share", "n", "late_true_prob"}]}``.
    ``bounds``: ``[(name, low, high[, periodic])]`` (default: rebuilt from the run's world).
    """
    run_dir = Path(run_dir)
    result = _finished_run(run_dir)
    config = result.get("config") or {}
    bounds = bounds if bounds is not None else factor_bounds(config)
    names = [b[0] for b in bounds]
    require(region.factor in names, f"factor {region.factor!r} is not a factor of this world; use one of {names}")
    column = names.index(region.factor)
    _, low, high, *rest = bounds[column]
    periodic = bool(rest and rest[0])
    circle = (low, high) if periodic else None
    records = read_jsonl(run_dir / STEPS_FILE)
    require(records, f"{run_dir / STEPS_FILE} is empty")
    q = len(records[0]["true_prob"])
    first = late_window([r["step"] for r in records], q, last, unit)
    per_instance, late_values, errors = _tally(records, region, column, circle, q, first,
                                               int(config.get("seed") or 0), _share_rate(result))
    rows = [{"instance": i, "share": float(np.mean(v["inside"])), "n": len(v["inside"]),
             "late_true_prob": float(np.mean(v["true_prob"]))} for i, v in sorted(per_instance.items())]
    inside = [x for v in per_instance.values() for x in v["inside"]]
    volume = region.volume_share(low, high, periodic)
    pooled = float(np.mean(inside))
    over_instances = mean_with_ci([row["share"] for row in rows])
    examiner = config.get("examiner") or {}
    return {"run_dir": str(run_dir), "target": str(config.get("target")), "examiner": examiner.get("name"),
            "seed": config.get("seed"), "q": q, "region": region.describe(), "volume_share": volume,
            "pooled_share": pooled, "ratio": pooled / volume if volume > 0 else float("nan"),
            "share_mean": over_instances["mean"], "share_lo": over_instances["lo"], "share_hi": over_instances["hi"],
            "late_true_prob": float(np.mean([row["late_true_prob"] for row in rows])),
            "late_proposals": len(inside), "late_values": late_values, "factor_bounds": [low, high],
            "periodic": periodic,
            "window_first_step": first,
            "error_rate_inside": float(np.mean(errors[True])) if errors[True] else float("nan"),
            "error_rate_outside": float(np.mean(errors[False])) if errors[False] else float("nan"),
            "per_instance": rows}


def aggregate(runs: Iterable[dict[str, Any]], control: str | None = None) -> list[dict[str, Any]]:
    """Group per-run results by (target, examiner): mean pooled share with a 95% bootstrap interval
    over the group's runs (seeds), its ratio to the volume share, to random search on the same
    target, and (``control``: a substring of the control target's path) to the same examiner on
    the control target."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["target"], run["examiner"]), []).append(run)
    rows = []
    for (target, examiner), members in sorted(groups.items()):
        share = mean_with_ci([m["pooled_share"] for m in members])
        late = mean_with_ci([m["late_true_prob"] for m in members])
        volume = members[0]["volume_share"]
        rows.append({"target": target, "examiner": examiner, "seeds": len(members), "share": share["mean"],
                     "share_lo": share["lo"], "share_hi": share["hi"], "volume_share": volume,
                     "ratio_to_volume": share["mean"] / volume if volume > 0 else float("nan"),
                     "late_true_prob": late["mean"], "late_true_prob_lo": late["lo"], "late_true_prob_hi": late["hi"],
                     "error_rate_inside": float(np.nanmean([m["error_rate_inside"] for m in members])),
                     "error_rate_outside": float(np.nanmean([m["error_rate_outside"] for m in members]))})
    by_key = {(r["target"], r["examiner"]): r for r in rows}
    for row in rows:
        random_row = by_key.get((row["target"], "random"))
        row["ratio_to_random"] = row["share"] / random_row["share"] if random_row and random_row["share"] > 0 else float("nan")
        control_target = next((t for t, e in by_key if control and control in t and e == row["examiner"]), None)
        control_row = by_key.get((control_target, row["examiner"])) if control_target else None
        row["ratio_to_control"] = (row["share"] / control_row["share"]
                                   if control_row and control_row["share"] > 0 else float("nan"))
    return rows


def markdown_table(rows: list[dict[str, Any]], region: Region) -> str:
    """The aggregated rows as a Markdown table."""
    lines = [f"Late proposals {region.describe()} (volume share {rows[0]['volume_share']:.3f})" if rows else "",
             "", "| target | examiner | seeds | share [95% CI over seeds] | / volume | / random | / control | "
             "late true-class prob | error rate in / out of region (all proposals) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {Path(r['target']).parent.parent.name or r['target']} | {r['examiner']} | {r['seeds']} | "
                     f"{format_interval(r['share'], r['share_lo'], r['share_hi'], 3)} | {r['ratio_to_volume']:.2f} | "
                     f"{r['ratio_to_random']:.2f} | {r['ratio_to_control']:.2f} | "
                     f"{format_interval(r['late_true_prob'], r['late_true_prob_lo'], r['late_true_prob_hi'], 3)} | "
                     f"{r['error_rate_inside']:.3f} / {r['error_rate_outside']:.3f} |")
    return "\n".join(lines)


def concentration_plot(rows: list[dict[str, Any]], runs: list[dict[str, Any]], region: Region,
                       path: str | Path) -> Path:
    """PNG: left, each (target, examiner) group's share of late proposals in the region with its
    interval over seeds against the volume share (dashed); right, one panel per target: where each
    examiner's late proposals fell on the factor (pooled over seeds; the region shaded)."""
    def name(target: str) -> str:
        return Path(target).parent.parent.name or target

    targets = list(dict.fromkeys(r["target"] for r in rows))
    fig = plt.figure(figsize=(13, max(4.0, 0.4 * len(rows) + 1.5)))
    grid = fig.add_gridspec(len(targets), 2, width_ratios=[1, 1.2], hspace=0.5)
    bars = fig.add_subplot(grid[:, 0])
    y = np.arange(len(rows))
    colours = [f"C{targets.index(r['target'])}" for r in rows]
    errors = np.array([[r["share"] - r["share_lo"] for r in rows], [r["share_hi"] - r["share"] for r in rows]])
    bars.barh(y, [r["share"] for r in rows], xerr=np.nan_to_num(errors), color=colours, alpha=0.7, capsize=3)
    bars.axvline(rows[0]["volume_share"], color="k", linestyle="--", label="volume share (random search)")
    bars.set(yticks=y, yticklabels=[f"{name(r['target'])} / {r['examiner']} ({r['seeds']})" for r in rows],
             xlim=(0, 1), xlabel=f"share of late proposals, {region.describe()} (seeds)")
    bars.invert_yaxis()
    bars.legend(loc="lower right", fontsize=8)
    low, high = runs[0]["factor_bounds"]
    edges = np.linspace(low, high, 25)
    spans = region.spans(low, high, bool(runs[0].get("periodic")))
    for k, target in enumerate(targets):
        hist = fig.add_subplot(grid[k, 1])
        for row in (r for r in rows if r["target"] == target):
            values = [v for run in runs if (run["target"], run["examiner"]) == (target, row["examiner"])
                      for v in run["late_values"]]
            hist.hist(values, bins=edges, histtype="step", density=True, linewidth=1.5, label=row["examiner"])
        for start, stop in spans:
            hist.axvspan(start, stop, color="tab:red", alpha=0.1)
        hist.set_xlim(low, high)
        hist.set_title(name(target), fontsize=9)
        hist.set_yticks([])
        hist.legend(fontsize=7, ncol=5, loc="upper left")
    hist.set_xlabel(f"{region.factor} of late proposals (region shaded)")
    return save_figure(fig, path)


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    """Run dirs (holding steps.jsonl and result.json) given directly or found under ``paths``."""
    found = []
    for path in map(Path, paths):
        require(path.exists(), f"{path} does not exist; pass worst-case run dirs or folders holding them")
        found += [path] if (path / STEPS_FILE).exists() else sorted(p.parent for p in path.rglob(STEPS_FILE))
    require(found, f"no worst-case run dirs (with {STEPS_FILE}) under {list(paths)}")
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="worst-case run dirs, or folders holding them")
    parser.add_argument("--factor", required=True)
    parser.add_argument("--low", type=float, required=True)
    parser.add_argument("--high", type=float, required=True)
    parser.add_argument("--outside", action="store_true", help="the region is the complement of [low, high]")
    # on a periodic factor --low above --high is the arc across the seam (e.g. --low 315 --high 45)
    parser.add_argument("--last", type=int, default=64, help="size of the late window (default 64)")
    parser.add_argument("--unit", choices=("queries", "iterations"), default="queries")
    parser.add_argument("--control", default=None, help="substring of the control target's path")
    parser.add_argument("--out", default=None, help="write concentration.json, .md and .png here")
    args = parser.parse_args(argv)
    region = Region(args.factor, args.low, args.high, args.outside)
    runs = []
    for run_dir in find_runs(args.runs):
        if not (run_dir / RESULT_FILE).exists():
            print(f"skipping {run_dir}: not finished (no {RESULT_FILE})")
            continue
        runs.append(run_concentration(run_dir, region, args.last, args.unit))
    rows = aggregate(runs, args.control)
    table = markdown_table(rows, region)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "concentration.json", {"region": region.describe(), "last": args.last, "unit": args.unit,
                                                "groups": rows, "runs": runs})
        (out / "concentration.md").write_text(table + "\n")
        print(f"plot: {concentration_plot(rows, runs, region, out / 'concentration.png')}")


if __name__ == "__main__":
    main()
