"""A sweep over checkpoints in one command: ``target=glob:PATTERN`` or ``target=list:FILE``.

``examine.py -m audit=evaluate target='glob:outputs/train/multiruns/X/*/checkpoints/target.pt'``
is rewritten, before Hydra parses the command line, into ``target='<path 1>','<path 2>',...``
(sorted, each quoted so paths with ``=`` or ``,`` survive Hydra's override grammar). A list file
holds one path per line (blank lines and ``#`` comments ignored; relative paths are relative to
the file). More than one checkpoint turns the command into a multirun (``-m`` is added).
"""

from __future__ import annotations

import glob
import logging
import sys
from pathlib import Path

from advaudit.errors import AdvauditError, require

PREFIXES = ("glob:", "list:")
MULTIRUN_FLAGS = ("-m", "--multirun")


def resolve_targets(spec: str) -> list[str]:
    """The checkpoint paths named by ``glob:PATTERN`` or ``list:FILE``; an error names an empty match."""
    kind, _, value = spec.partition(":")
    require(value != "", f"target={spec!r} names no pattern; write target=glob:<pattern> or target=list:<file>")
    if kind == "glob":
        paths = sorted(glob.glob(str(Path(value).expanduser()), recursive=True))
        require(paths, f"target=glob:{value} matches no file; check the pattern (relative to {Path.cwd()}), "
                "e.g. outputs/train/multiruns/<time>/*/checkpoints/target.pt")
        return paths
    path = Path(value).expanduser()
    require(path.is_file(), f"target=list:{value}: no such file; write one checkpoint path per line")
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    paths = [str(p if Path(p).is_absolute() else path.parent / p) for p in lines if p]
    require(paths, f"target=list:{value} lists no checkpoint; write one path per line")
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        # still swept: each missing one fails as its own job (recorded), the others run
        logging.getLogger(__name__).warning("target list %s names %d missing files, e.g. %s", value, len(missing),
                                            missing[0])
    return paths


def _quote(path: str) -> str:
    require("'" not in path, f"checkpoint path {path!r} contains a single quote; rename it to sweep over it")
    return f"'{path}'"


def expand_target_argv(argv: list[str]) -> list[str]:
    """``argv`` with a ``target=glob:...`` / ``target=list:...`` override expanded (module docstring)."""
    out, expanded = [], 0
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+~") == "target" and value.strip("'\"").startswith(PREFIXES):
            paths = resolve_targets(value.strip("'\""))
            expanded = max(expanded, len(paths))
            arg = f"{key}=" + ",".join(_quote(p) for p in paths)
        out.append(arg)
    if expanded > 1 and not any(a in MULTIRUN_FLAGS for a in out):
        out.insert(1, "--multirun")
    return out


def main_argv(argv: list[str]) -> list[str]:
    """:func:`expand_target_argv` for a script's ``sys.argv``: a bad pattern exits 2 with one line."""
    try:
        return expand_target_argv(argv)
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
