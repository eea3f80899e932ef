"""``python -m advaudit.merge SHARD_RUN_DIR ... --out DIR`` (also ``advaudit merge``): one audit (a worst-case
examination, an error search) from the run dirs of its shards (``audit.shards=K audit.shard=0..K-1``), with the
``result.json`` and report of the unsharded run (docs/scaling-out.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from advaudit.audits.merging import merge_shards
from advaudit.errors import AdvauditError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advaudit.merge", description=__doc__.splitlines()[0])
    parser.add_argument("shards", nargs="+", help="the run dirs of every shard of one audit")
    parser.add_argument("--out", required=True, help="the merged run dir (result.json, report.md, the audit's records)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    started = time.perf_counter()
    try:
        result = merge_shards([Path(d) for d in args.shards], out)
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"merged {len(args.shards)} shards in {time.perf_counter() - started:.1f} s: {out / 'result.json'} "
          f"(report: {result.get('report', out / 'report.md')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
