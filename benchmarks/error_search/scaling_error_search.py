"""How adversarial-distance error search's cost grows with the pool: 500, 2,000, 10,000 items.

For each pool size the pool is the first ``n`` items of the target's splits (test, then train: a
two-class Fashion-MNIST target has 2,000 test items). The two terms of the audit's cost are timed
separately, as the audit runs them:

- the attack: :func:`advaudit.search.attacks.attack_items` in chunks of ``--chunk`` items (the
  audit's ``search.adversarial_distance.attack.chunk``), starting points drawn from the whole pool;
- the ranking: the calibrated confidences of the pool and the LOWESS of log-MAE on confidence
  (adversarial distance, Eq. 5), fitted once on the pool.

Each finished chunk is appended to ``--out`` (JSONL) and skipped on a rerun, so a long pool can be
measured over several runs; the summary and the plot (``<out>.png``) are redrawn from all rows.

    PYTHONPATH=. .venv/bin/python benchmarks/error_search/scaling_error_search.py <target.pt> --sizes 500,2000,10000 \
        --out docs/results/scale/scaling_error_search.jsonl [--settings steps=4,probe_resolution=14]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from adversarial_distance_speed import parse_settings  # noqa: E402

from advaudit.audits.common import target_datamodule  # noqa: E402
from advaudit.core.records import append_jsonl, read_jsonl  # noqa: E402
from advaudit.models import load_target  # noqa: E402
from advaudit.search.settings import LowessConf  # noqa: E402
from advaudit.search.adversarial_distance import adversarial_distance, distance_values  # noqa: E402
from advaudit.search.attacks import attack_box, attack_items, mae  # noqa: E402


def candidate_items(target, largest: int) -> torch.Tensor:
    """The target's test items, then its train items ``[M, ...]``: pool ``n`` is the first ``n``.
    Refuses, before any work, a ``largest`` pool the splits cannot fill."""
    splits = target_datamodule(target).splits
    x = torch.cat([splits["test"].x, splits["train"].x])
    if len(x) < largest:
        raise SystemExit(f"only {len(x)} items in the target's test + train splits; pool size {largest} is too large")
    return x


def measure_chunk(target, pool: torch.Tensor, start: int, chunk: int, box, settings: dict) -> dict:
    x = pool[start:start + chunk]
    began = time.perf_counter()
    result = attack_items(target, x, pool, target_labels(target, pool), box, **settings)
    seconds = time.perf_counter() - began
    return {"seconds": round(seconds, 2), "queries": result.queries, "items": len(x),
            "mae": mae(x, result.adversarial).tolist()}


_LABELS: dict[int, torch.Tensor] = {}


def target_labels(target, pool: torch.Tensor) -> torch.Tensor:
    """Predicted labels of the pool (the attack's starting candidates), computed once per pool size."""
    if len(pool) not in _LABELS:
        with torch.inference_mode():
            _LABELS[len(pool)] = target.predict_proba(pool, calibrated=False).argmax(1)
    return _LABELS[len(pool)]


def ranking_seconds(target, pool: torch.Tensor, distance: torch.Tensor) -> float:
    """Seconds for the pool's calibrated confidences and one LOWESS fit of log-MAE on them."""
    began = time.perf_counter()
    with torch.inference_mode():
        confidence = target.predict_proba(pool).max(1).values
    adversarial_distance(distance_values(distance, True).numpy(), confidence.double().numpy(), LowessConf())
    return time.perf_counter() - began


def plot(summary: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    sizes = [r["pool"] for r in summary]
    ax.plot(sizes, [r["attack_s"] for r in summary], marker="o", label="attack (HSJ)")
    ax.plot(sizes, [r["ranking_s"] for r in summary], marker="o", label="ranking (confidence + LOWESS)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("pool size (items)")
    ax.set_ylabel("seconds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title("adversarial-distance error search cost")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--sizes", default="500,2000,10000")
    parser.add_argument("--settings", default="", help="k=v,... overrides of the audit's default HSJ settings")
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="docs/results/scale/scaling_error_search.jsonl")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    settings = parse_settings(args.settings)
    target = load_target(args.target).eval()
    out = Path(args.out)
    done = {(r["pool"], r["start"]) for r in read_jsonl(out) if "start" in r} if out.exists() else set()
    sizes = [int(v) for v in args.sizes.split(",")]
    items = candidate_items(target, max(sizes))
    for n in sizes:
        pool = items[:n]
        box = attack_box(pool)
        for start in range(0, n, args.chunk):
            if (n, start) in done:
                continue
            row = {"pool": n, "start": start, "settings": settings, **measure_chunk(target, pool, start, args.chunk,
                                                                                   box, settings)}
            append_jsonl(out, row)
            print(json.dumps({k: v for k, v in row.items() if k != "mae"}), flush=True)
    rows = [r for r in read_jsonl(out) if "start" in r]
    summary = []
    for n in sorted({r["pool"] for r in rows}):
        mine = sorted((r for r in rows if r["pool"] == n), key=lambda r: r["start"])
        if sum(r["items"] for r in mine) < n:
            continue  # not finished yet
        distance = torch.tensor([m for r in mine for m in r["mae"]], dtype=torch.float64)
        summary.append({"pool": n, "attack_s": round(sum(r["seconds"] for r in mine), 1),
                        "queries_per_item": round(sum(r["queries"] for r in mine) / n, 1),
                        "ranking_s": round(ranking_seconds(target, items[:n], distance), 2)})
    print("| pool items | attack s | queries/item | ranking s (confidence + LOWESS) |\n|---|---|---|---|")
    for r in summary:
        print(f"| {r['pool']:,} | {r['attack_s']} | {r['queries_per_item']} | {r['ranking_s']} |")
    if summary:
        plot(summary, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
