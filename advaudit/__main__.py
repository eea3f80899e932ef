"""``advaudit <command>`` (also ``python -m advaudit <command>``): commands beside train.py and examine.py.

    advaudit import SPEC.yaml --out FILE.pt [key=value ...]   a model trained elsewhere -> a target file
    advaudit compare RUN_DIR ...                              paired comparison of audit runs
    advaudit merge SHARD_RUN_DIR ... --out DIR                one examination from its shards (audit.shards)
    advaudit demo                                             the demo (make demo)
"""

from __future__ import annotations

import runpy
import sys

from advaudit.models.targets.imported.command import main as import_main

COMMANDS = {"import": "advaudit.models.targets.imported.command", "compare": "advaudit.compare", "merge": "advaudit.merge", "demo": "advaudit.demo"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command == "import":
        return import_main(rest)
    sys.argv = [f"advaudit {command}", *rest]
    runpy.run_module(COMMANDS[command], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
