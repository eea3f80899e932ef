"""Does a score carry information about errors beyond the model's confidence? Per replication seed.

For each finished seed of ``benchmarks/error_search/error_search_replications.py`` this reloads the target, its
eligible items (predicted critical class, calibrated confidence > tau) and the cached attack distances
(``search/scores/<method>.jsonl``), recomputes AdvDist = D - LOWESS(D ~ p) on all eligible items, and
reports how well each score ranks errors first (ROC AUC, 0.5 = no information):

- ``auc_confidence``: score = -confidence (what low-confidence search and SDR's denominator use);
- ``auc_<method>``: score = -AdvDist (what the method queries first);
- ``auc_<method>_within``: the same AUC inside each confidence quintile, averaged (weights = pairs):
  the information beyond confidence that SDR > random requires.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/error_search/error_search_signal.py outputs/error_search_replications/fmnist_bias

Writes ``<task dir>/signal.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from advaudit.audits.common import target_datamodule  # noqa: E402
from advaudit.core.records import read_json, read_jsonl, write_json  # noqa: E402
from advaudit.models import load_target  # noqa: E402
from advaudit.config import typed  # noqa: E402
from advaudit.search.settings import LowessConf  # noqa: E402
from advaudit.search.adversarial_distance import adversarial_distance, distance_values  # noqa: E402
from advaudit.search.metrics import error_auc, error_auc_within_confidence  # noqa: E402
from advaudit.search.pools import eligible  # noqa: E402


def seed_signal(seed_dir: Path) -> dict[str, float]:
    """The AUCs of one seed's target (see the module docstring)."""
    config = read_json(seed_dir / "search" / "result.json")["config"]
    audit, search = config["audit"], config["search"]
    target = load_target(seed_dir / "train" / "checkpoints" / "target.pt", device="cpu")
    split = target_datamodule(target).splits[audit["split"]]
    confidence, predicted = target.predict_proba(split.x).max(1)
    index = eligible(predicted, confidence, int(audit["critical_class"]), float(audit["tau"])).nonzero().squeeze(1)
    conf = confidence[index].double().numpy()
    is_error = (split.y[index] != int(audit["critical_class"])).numpy()
    row: dict[str, float] = {"eligible": len(index), "errors": int(is_error.sum()),
                             "auc_confidence": error_auc(-conf, is_error)}
    for method in ("adversarial_distance", "gad"):
        path = seed_dir / "search" / "scores" / f"{method}.jsonl"
        if not path.exists():
            continue
        mae_by_item = {r["item"]: (r["mae"] if r.get("ok", True) else float("nan")) for r in read_jsonl(path)}
        mae = torch.tensor([mae_by_item.get(int(i), float("nan")) for i in index], dtype=torch.float64)
        lowess = search[method]["lowess"]
        settings = typed(LowessConf, lowess)
        advdist = adversarial_distance(distance_values(mae, settings.log).numpy(), conf, settings)
        ok = np.isfinite(advdist)
        row[f"auc_{method}"] = error_auc(-advdist[ok], is_error[ok])
        row[f"auc_{method}_within"] = error_auc_within_confidence(-advdist[ok], is_error[ok], conf[ok])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task_dir", type=Path, help="<out>/<task> of error_search_replications.py")
    args = parser.parse_args()
    rows = {d.name: seed_signal(d) for d in sorted(args.task_dir.glob("seed*"))
            if (d / "search" / "summary.json").exists()}
    write_json(args.task_dir / "signal.json", rows)
    keys = sorted({k for r in rows.values() for k in r if k.startswith("auc")})
    print("| seed | eligible | errors | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 3) + "|")
    for name, r in rows.items():
        print(f"| {name} | {r['eligible']} | {r['errors']} | " + " | ".join(f"{r.get(k, float('nan')):.3f}" for k in keys) + " |")
    print("| mean | | | " + " | ".join(f"{np.nanmean([r.get(k, np.nan) for r in rows.values()]):.3f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
