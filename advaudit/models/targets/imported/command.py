"""``advaudit import``: a model trained elsewhere -> one safe, self-describing target file.

    advaudit import my_target.yaml --out team/resnet18_fmnist.pt
    advaudit import my_target.yaml --out r.pt path=other_weights.pt temperature=calibrate

The YAML file holds a ``target`` block (README: "Audit a model you already have"), either at its
top level or under a ``target:`` key; ``key=value`` arguments override its keys (OmegaConf dotlist).
The written file is checked against the model it came from (scores on a probe batch) and is then
audited, compared and swept like any ``target.pt``: ``examine.py target=team/resnet18_fmnist.pt``.
Exit codes: 0 written, 2 a problem with the block or the model (one line), 1 a bug.
"""

from __future__ import annotations

import argparse
import json
import sys

from advaudit.errors import EXIT_USER_ERROR, classify
from advaudit.models.targets.imported.spec import parse_block
from advaudit.models.targets.imported.store import import_target
from advaudit.runtime import configure_threads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="advaudit import", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("spec", help="YAML file with the target block")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the block's keys")
    parser.add_argument("--out", "-o", required=True, help="where to write the target file (.pt)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the probe batch and of a dataset named by the block")
    args = parser.parse_intermixed_args(argv)
    configure_threads(None)
    try:
        summary = import_target(parse_block(args.spec, args.overrides), args.out, seed=args.seed)
    except Exception as error:  # noqa: BLE001 - mapped to a message and an exit code, as examine.py does
        kind, message = classify(error)
        if kind == "bug":
            raise
        print(f"error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    print(f"wrote {summary['path']}: {summary['format']} -> {summary['backend']}, classes {summary['classes']}, "
          f"input {list(summary['input_shape'])}, scores equal to the source model within {summary['logit_gap']:.2g}")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
