"""Compare checkpoints: gather ``result.json`` files of many runs into one ranked table.

``python -m advaudit.report.leaderboard outputs/examine/multiruns/<time> [--metric examine/...]``
writes ``leaderboard.csv``, ``leaderboard.md`` and ``leaderboard.png`` into the folder (or
``--out``), one row per run (target x audit x method x seed), numeric metrics as columns. Like a
model registry, each row keeps the data that identifies it: the checkpoint, the audit and the
run directory.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from advaudit.audits.cards import audit_card
from advaudit.core.plots import plt, save_figure
from advaudit.core.records import read_json
from advaudit.errors import require

ID_COLUMNS = ["target", "audit", "method", "seed", "run_dir"]


def _method(config: dict[str, Any]) -> str | None:
    """What distinguishes runs of the same audit: the method its card names (the examiner, the search method),
    for a training run (no audit) its model."""
    audit = config.get("audit")
    if isinstance(audit, dict):
        card = audit_card(audit.get("name"))
        return card.method_in(config) if card is not None else None
    value = config.get("model")
    if isinstance(value, dict):
        arch = value.get("arch")  # a label in runs recorded before models had a name
        estimator = value.get("estimator")  # a name in runs recorded before estimators had a _target_
        return value.get("name") or (arch if isinstance(arch, str) else None) or (
            estimator if isinstance(estimator, str) else None)
    return None


def collect_results(roots: Iterable[str | Path]) -> pd.DataFrame:
    """One row per ``result.json`` found under ``roots`` (recursively), numeric metrics as columns."""
    rows = []
    for root in roots:
        root = Path(root)
        require(root.exists(), f"{root} does not exist; pass a run or multirun folder")
        files = [root] if root.is_file() else sorted(root.rglob("result.json"))
        for path in files:
            result = read_json(path)
            config = result.get("config") or {}
            row: dict[str, Any] = {
                "target": result.get("target") or result.get("checkpoint"),
                "audit": result.get("audit") or result.get("task"),
                "method": _method(config),
                "seed": config.get("seed"),
                "run_dir": str(path.parent),
            }
            row.update({k: v for k, v in result.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "seed"})
            rows.append(row)
    require(rows, f"no result.json under {[str(r) for r in roots]}")
    return pd.DataFrame(rows)


def rank(frame: pd.DataFrame, metric: str | None = None, ascending: bool = False) -> pd.DataFrame:
    """Sort by ``metric`` (default: the first ``/``-named metric column)."""
    metric = metric or next((c for c in frame.columns if "/" in c), None)
    if metric is None:
        return frame
    require(metric in frame.columns, f"metric {metric!r} is in no result; columns: {list(frame.columns)}")
    return frame.sort_values(metric, ascending=ascending, na_position="last").reset_index(drop=True)


def write_leaderboard(frame: pd.DataFrame, out_dir: str | Path, metric: str | None = None) -> dict[str, Path]:
    """Write CSV, Markdown and a bar chart of ``metric`` per row; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "leaderboard.csv", "md": out / "leaderboard.md"}
    frame.to_csv(paths["csv"], index=False)
    paths["md"].write_text(frame.to_markdown(index=False) if _has_tabulate() else frame.to_string(index=False))
    metric = metric or next((c for c in frame.columns if "/" in c), None)
    if metric is not None:
        labels = [f"{Path(str(t)).parent.parent.name if t else '?'}|{m or a}|s{s}"
                  for t, m, a, s in zip(frame["target"], frame["method"], frame["audit"], frame["seed"])]
        fig, ax = plt.subplots(figsize=(6, 0.3 * len(frame) + 1.2))
        values = frame[metric].astype(float)
        error = None
        if f"{metric}/lo" in frame.columns and f"{metric}/hi" in frame.columns:  # 95% interval over instances
            error = [(values - frame[f"{metric}/lo"].astype(float)).clip(lower=0),
                     (frame[f"{metric}/hi"].astype(float) - values).clip(lower=0)]
        ax.barh(range(len(frame)), values, color="tab:blue", xerr=error, capsize=2)
        ax.set_yticks(range(len(frame)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(metric)
        paths["png"] = save_figure(fig, out / "leaderboard.png")
    return paths


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401  (optional: pandas' to_markdown needs it; without it, plain text)
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", help="run / multirun folders (or result.json files)")
    parser.add_argument("--metric", default=None, help="column to rank by (default: first metric)")
    parser.add_argument("--ascending", action="store_true", help="lower is better (e.g. examine/E_T, examine/worst)")
    parser.add_argument("--out", default=None, help="output folder (default: the first root)")
    args = parser.parse_args(argv)
    frame = rank(collect_results(args.roots), args.metric, args.ascending)
    paths = write_leaderboard(frame, args.out or args.roots[0], args.metric)
    shown = frame.drop(columns=["run_dir"])
    if args.metric:  # the terminal gets the ranking; every column stays in the CSV and Markdown files
        keep = [c for c in ("target", "audit", "method", "seed", args.metric, f"{args.metric}/lo", f"{args.metric}/hi")
                if c in shown.columns]
        shown = shown[keep]
    print(shown.to_string(index=False))
    print("\n" + "\n".join(f"{k}: {v}" for k, v in paths.items()))


if __name__ == "__main__":
    main()
