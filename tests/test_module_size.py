"""Small modules with one job: no file under ``advaudit/`` is over 400 lines (the house rule)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "advaudit"
MAX_LINES = 400


def long_files(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """``{path relative to root's parent: lines}`` of the ``.py`` files under ``root`` with more than ``limit`` lines."""
    sizes = {path: len(path.read_text().splitlines()) for path in sorted(root.rglob("*.py"))}
    return {str(path.relative_to(root.parent)): n for path, n in sizes.items() if n > limit}


def test_no_module_is_over_400_lines() -> None:
    found = long_files(PACKAGE)
    assert not found, f"split these by job (one job per module): {found}"


def test_long_files_known_answer(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * 3)
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * 5)
    assert long_files(tmp_path / "pkg", limit=4) == {"pkg/long.py": 5}
