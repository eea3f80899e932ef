"""``python -m advaudit.merge SHARD_RUN_DIR ... --out DIR`` (also ``advaudit merge``): one worst-case
examination from the run dirs of its shards (``audit.shards=K audit.shard=0..K-1``), with the
``result.json``, ``steps.jsonl`` and report of the unsharded run (docs/scaling-out.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advaudit.audits.worst_case_merge import merge_shards
from advaudit.core.records import write_json
from advaudit.errors import AdvauditError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advaudit.merge", description=__doc__.splitlines()[0])
    parser.add_argument("shards", nargs="+", help="the run dirs of every shard of one examination")
    parser.add_argument("--out", required=True, help="the merged run dir (result.json, steps.jsonl, report.md)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        result = merge_shards([Path(d) for d in args.shards], out)
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_json(out / "result.json", result)
    print(f"merged {len(args.shards)} shards: {out / 'result.json'} (report: {result['report']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
