"""How the worst-case audit's cost grows: examiner time against instances N and budget T.

Each point is one run of ``benchmarks/worst_case/examiner_speed.py``'s loop on its planted synthetic objective,
which costs nothing to evaluate, so the time is the examiner's own; the audit's total adds
queries x (render + forward per query), measured by ``examiner_speed.py --target``. Rows are appended to ``--out`` (JSONL) as they
finish and a rerun skips the points already there; the plot (log-log, PNG) is redrawn from all rows.

    .venv/bin/python benchmarks/scale/scaling.py --examiners bo,rl --instances 10,55,220 \
        --budgets 100,500,2000 --base-instances 10 --base-budget 100 --out docs/results/scale/scaling_examiners.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from examiner_speed import N_DIMS_PLANTED, make_examiner, run_planted  # noqa: E402

from advaudit.core.records import append_jsonl, read_jsonl  # noqa: E402
from advaudit.runtime import configure_threads  # noqa: E402


def points(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(examiner, N, T): N swept at the base budget, T swept at the base instance count."""
    out = []
    for name in args.examiners.split(","):
        out += [(name, int(n), args.base_budget) for n in args.instances.split(",")]
        out += [(name, args.base_instances, int(t)) for t in args.budgets.split(",") if int(t) != args.base_budget]
    return out


def measure(name: str, n: int, budget: int, seed: int) -> dict[str, float]:
    examiner = make_examiner(name, n, N_DIMS_PLANTED, seed, None, {})
    start = time.perf_counter()
    result = run_planted(examiner, n, budget, seed)
    split = {f"{k}_s": round(v, 2) for k, v in getattr(examiner, "seconds", {}).items()}  # BO: fit, factor, screen, refine
    return {"examiner": name, "instances": n, "budget": budget, "wall_s": round(time.perf_counter() - start, 2),
            "examiner_s": round(result["examiner_s"], 2), "model_s": round(result["model_s"], 2),
            "fit_s": round(getattr(examiner, "fit_seconds", 0.0), 2), **split, "best": result["best"],
            "late_in_planted": result["late_in_planted"]}


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name in sorted({r["examiner"] for r in rows}):
        mine = [r for r in rows if r["examiner"] == name]
        base_t = min(r["budget"] for r in mine)
        base_n = min(r["instances"] for r in mine)
        by_n = sorted((r["instances"], r["examiner_s"]) for r in mine if r["budget"] == base_t)
        by_t = sorted((r["budget"], r["examiner_s"]) for r in mine if r["instances"] == base_n)
        axes[0].plot(*zip(*by_n), marker="o", label=f"{name} (T={base_t})")
        axes[1].plot(*zip(*by_t), marker="o", label=f"{name} (N={base_n})")
    for ax, xlabel in zip(axes, ("instances N", "budget T (queries per instance)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("examiner seconds")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("examiner cost (model time excluded; add queries x render+forward cost per query)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examiners", default="bo,rl")
    parser.add_argument("--instances", default="10,55,220")
    parser.add_argument("--budgets", default="100,500,2000")
    parser.add_argument("--base-instances", type=int, default=10)
    parser.add_argument("--base-budget", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="docs/results/scale/scaling_examiners.jsonl")
    args = parser.parse_args()
    configure_threads(args.threads)
    out = Path(args.out)
    done = {(r["examiner"], r["instances"], r["budget"]) for r in read_jsonl(out)} if out.exists() else set()
    for name, n, budget in points(args):
        if (name, n, budget) in done:
            continue
        row = measure(name, n, budget, args.seed)
        append_jsonl(out, row)
        print(json.dumps(row), flush=True)
    rows = read_jsonl(out)
    plot(rows, out.with_suffix(".png"))
    print("| examiner | N | T | examiner s | GP fits s | growing L^-1 s | screen s | refinement s | best loss |\n"
          "|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (r["examiner"], r["instances"], r["budget"])):
        parts = " | ".join(str(r.get(f"{k}_s", "-")) for k in ("factor", "screen", "refine"))
        print(f"| {r['examiner']} | {r['instances']} | {r['budget']} | {r['examiner_s']} | {r['fit_s']} | {parts} | "
              f"{r['best']:.3f} |")


if __name__ == "__main__":
    main()
