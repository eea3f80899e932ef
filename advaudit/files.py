"""What a file is, said in words, before it is trusted: for messages that name the problem.

:func:`describe_path` says whether a path is a usable file, a directory, missing, empty or
unreadable; :func:`sniff` looks at a file's first bytes (a zip archive as torch writes it, a
legacy pickle, text, an image, ...) so that a loader can say "is a text file" instead of
passing on ``KeyError: 101`` from deep inside an unpickler.
"""

from __future__ import annotations

import os
from pathlib import Path

_MAGIC = [
    (b"PK\x03\x04", "a zip archive"),
    (b"\x80\x02", "a legacy torch/pickle file"),
    (b"\x80\x03", "a pickle file"), (b"\x80\x04", "a pickle file"), (b"\x80\x05", "a pickle file"),
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip file"), (b"\x93NUMPY", "a numpy .npy file"), (b"%PDF", "a PDF file"),
    (b"\x89HDF", "an HDF5 file"),
]


def describe_path(path: str | Path) -> str:
    """``"a file"`` for a readable non-empty file, else what it is (``"a directory"``, ...)."""
    path = Path(path)
    if path.is_dir():
        return "a directory"
    if not path.exists():
        return "missing (it does not exist)" if not path.is_symlink() else "a broken symlink (its target does not exist)"
    if not path.is_file():
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "a file without read permission"
    if path.stat().st_size == 0:
        return "an empty file (0 bytes)"
    return "a file"


def sniff(path: str | Path, size: int = 512) -> str:
    """What the first ``size`` bytes of ``path`` look like: ``"a zip archive"``, ``"a text file"``, ..."""
    with open(path, "rb") as handle:
        head = handle.read(size)
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return "a binary file of unknown format"
    first = text.strip().splitlines()[0][:40] if text.strip() else ""
    return f"a text file (starting {first!r})" if first else "a text file"
