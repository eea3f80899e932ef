"""The documentation hangs together without building it: every page is in the site's navigation,
every relative link of the README and of the pages points at a file that exists, every ``train.py`` /
``examine.py`` command a user page shows (not the measured-results pages, which record what was run, nor
the extending guide's, which use the parts it defines) is one the README shows (where ``tests/config/test_known_keys.py``
composes and validates it), and no page carries a history label. ``make docs`` (mkdocs, strict)
checks the same links and also their anchors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"(?:\.venv/bin/python\s+)?((?:train|examine)\.py\s.*)")
HISTORY_LABEL = re.compile(r"\bissues?[- ]?#?\d+|\b(?:first|second|third|fourth|fifth|sixth|last|previous|this|next)"
                           r" session\b|\bsessions?\b", re.I)


def nav_pages(nav: Any) -> list[str]:
    """Every page path named in a mkdocs ``nav`` (nested lists of ``{title: path | nav}``)."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    raise TypeError(f"unexpected nav entry {nav!r}")


def relative_links(markdown: str) -> list[str]:
    """Targets of the Markdown links and images in ``markdown`` that point into the repository, without
    their anchors (links inside fenced code blocks are not links)."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    targets = [match.group(1) for match in LINK.finditer(text)]
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def shown_commands(markdown: str) -> set[str]:
    """``train.py ...`` / ``examine.py ...`` lines of the ``bash`` blocks, continuations joined, spaces collapsed."""
    commands = set()
    for block in re.findall(r"```bash\n(.*?)```", markdown, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            match = COMMAND.match(line.strip())
            if match:
                commands.add(" ".join(match.group(1).split()))
    return commands


PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def test_the_helpers_find_what_they_look_for() -> None:
    assert nav_pages([{"A": "a.md"}, {"B": [{"C": "b/c.md"}, "d.md"]}]) == ["a.md", "b/c.md", "d.md"]
    text = "[x](a.md#y) ![p](../p.png) [w](https://e.org) [s](#self)\n```bash\n[no](n.md)\n```\n"
    assert relative_links(text) == ["a.md", "../p.png"]
    block = "```bash\n.venv/bin/python examine.py a=1 \\\n    b=2   # c\ntrain.py x=1\nls\n```\n"
    assert shown_commands(block) == {"examine.py a=1 b=2 # c", "train.py x=1"}
    assert HISTORY_LABEL.search("as in issue 11") and HISTORY_LABEL.search("(fourth session)")
    assert HISTORY_LABEL.search("an issue with the data at 11 px") is None


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    nav = nav_pages(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"])
    assert len(nav) == len(set(nav)), "a page is listed twice in mkdocs.yml"
    assert sorted(nav) == PAGES


@pytest.mark.parametrize("page", ["README.md", *[f"docs/{p}" for p in PAGES]])
def test_relative_links_point_at_files_that_exist(page: str) -> None:
    path = REPO / page
    missing = [t for t in relative_links(path.read_text()) if not (path.parent / t).exists()]
    assert missing == []


def test_the_user_pages_show_only_commands_the_readme_shows() -> None:
    """The measured-results pages record the commands that were run, and the extending guide's commands
    use the parts it defines; every other page shows recipes."""
    readme = shown_commands((REPO / "README.md").read_text())
    user_pages = [p for p in PAGES if not p.startswith(("results/", "replications/")) and p != "extending.md"]
    shown = set().union(*(shown_commands((DOCS / p).read_text()) for p in user_pages))
    assert len(shown) >= 30
    assert sorted(shown - readme) == []


@pytest.mark.parametrize("page", ["README.md", *[f"docs/{p}" for p in PAGES]])
def test_no_history_labels(page: str) -> None:
    lines = [line for line in (REPO / page).read_text().splitlines() if HISTORY_LABEL.search(line)]
    assert lines == []
