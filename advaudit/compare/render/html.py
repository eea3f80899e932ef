"""``comparison.html``: the comparison's Markdown as one self-contained page a person opens offline.

The page is rendered from ``comparison.md`` itself (:mod:`advaudit.compare.render.markdown`; so the two never
disagree: verdicts first, tables after) by a converter for the Markdown subset the report writes (headings,
paragraphs, one- and two-level lists, pipe tables, images, ``**bold**`` and ```code```). Every figure is
embedded as a base64 PNG ``data:`` URI and the style sheet is inline: the page loads nothing. A section alone
(:func:`where_html`) goes through the same converter.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from advaudit.compare.render.markdown import where_markdown

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 1.6em; }
h3 { font-size: 1.1em; margin-top: 1.3em; }
table { border-collapse: collapse; font-size: .82em; margin: .6em 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } tr:nth-child(even) td { background: #fafafa; }
code { background: #f3f3f3; padding: 0 .25em; border-radius: 3px; font-size: .92em; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
li { margin: .2em 0; } li strong { color: #7a1f1f; }
"""


def inline(text: str) -> str:
    """Escape ``text`` and turn ``**bold**`` and ```code``` into HTML."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)


def image(alt: str, name: str, folder: Path) -> str:
    """An ``<img>`` with the PNG ``folder/name`` embedded, or a line saying it is missing."""
    path = folder / name
    if not path.is_file():
        return f"<p><em>figure {html.escape(name)} is missing</em></p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def _table(rows: list[str]) -> str:
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    head, body = cells[0], [c for c in cells[1:] if not all(re.fullmatch(r":?-+:?", x) for x in c)]
    parts = ["<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr></thead><tbody>"]
    parts += ["<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in body]
    return "\n".join(parts) + "</tbody></table>"


def _list(items: list[str]) -> str:
    """A list whose items start ``- `` (top level) or ``  - `` (nested under the item before)."""
    out, open_nested = ["<ul>"], False
    for item in items:
        nested = item.startswith("  ")
        if nested and not open_nested:
            out[-1] = out[-1].removesuffix("</li>") + "<ul>"
            open_nested = True
        elif not nested and open_nested:
            out.append("</ul></li>")
            open_nested = False
        out.append(f"<li>{inline(item.strip()[2:])}</li>")
    if open_nested:
        out.append("</ul></li>")
    return "\n".join(out + ["</ul>"])


def markdown_to_html(text: str, folder: Path) -> str:
    """The body HTML of ``text`` (the report's Markdown subset: module docstring); images from ``folder``."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        j = i
        if line.startswith("|"):
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            blocks.append(_table(lines[i:j]))
        elif line.startswith("- "):
            while j < len(lines) and (lines[j].startswith("- ") or lines[j].startswith("  - ")):
                j += 1
            blocks.append(_list(lines[i:j]))
        else:
            j = i + 1
            heading = re.match(r"(#{1,4}) (.*)", line)
            picture = re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", line.strip())
            if heading:
                level = len(heading.group(1))
                blocks.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
            elif picture:
                blocks.append(image(picture.group(1), picture.group(2), folder))
            else:
                blocks.append(f"<p>{inline(line)}</p>")
        i = j
    return "\n".join(blocks)


def write_html(markdown_path: Path, path: Path) -> Path:
    """Write ``path``: the page of ``markdown_path`` with its figures embedded (module docstring)."""
    body = markdown_to_html(markdown_path.read_text(), markdown_path.parent)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Checkpoint comparison</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")
    path.write_text(page, encoding="utf-8")
    return path


def where_html(section: dict[str, Any] | None) -> str:
    """The where section (:mod:`advaudit.compare.where.section`) as a self-contained HTML fragment: the Markdown
    the page shows for it, converted as the page is, its figure embedded; empty for None."""
    if not section:
        return ""
    text = "\n".join(where_markdown(section))
    return f'<section class="where">\n{markdown_to_html(text, Path(section["plot"]).parent)}\n</section>'
