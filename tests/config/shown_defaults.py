"""Every built-in option's YAML shows its settings: the keys it sets, then the others at their defaults.

The settings dataclass stays the one place a default lives (``advaudit/<package>/settings.py``); a
built-in option (``conf/<group>/<name>.yaml`` naming a ``<schema>_schema``) ends with a comment block
listing every key it does not set itself, with the value the dataclass gives it. Comments change no
composed value (the golden configs are untouched); ``tests/config/test_shown_defaults.py`` fails when a
block no longer says what the dataclass holds. Rewrite the blocks after changing a default with::

    PYTHONPATH=$PWD python -m tests.config.shown_defaults
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from advaudit.registry import SCHEMAS

REPO = Path(__file__).resolve().parents[2]
CONF_DIR = REPO / "conf"
#: the first line of the block; everything from it to the end of the file is the block
HEADER = "# ── the settings this file does not set, at their defaults"
#: what each shown line starts with
INDENT = "#   "


def options() -> list[Path]:
    """The YAML options of the parts' config groups (``audit``, ``examiner``, ``search/method``, ...)."""
    groups = sorted({group for group, _, _ in SCHEMAS if group and group != "paths"})
    return sorted(path for group in groups for path in (CONF_DIR / group).glob("*.yaml"))


def _own_text(path: Path) -> str:
    """The file without its block."""
    text = path.read_text()
    return text.split("\n" + HEADER, 1)[0].rstrip("\n") + "\n" if HEADER in text else text


def _composed(path: Path) -> tuple[DictConfig, type] | None:
    """The option's value as its defaults list builds it (schema, same-group bases, then the file), and the
    settings dataclass it rests on; None for a file that names no schema."""
    schemas = {(group, name): cls for group, name, cls in SCHEMAS if group}
    group = path.parent.relative_to(CONF_DIR).as_posix()
    own = OmegaConf.to_container(OmegaConf.create(_own_text(path)), resolve=False)
    entries = list(own.pop("defaults", []))
    if "_self_" not in entries:
        entries.append("_self_")
    body = OmegaConf.create(own)
    value, schema = OmegaConf.create({}), None
    for entry in entries:
        if entry == "_self_":
            value = OmegaConf.merge(value, body)
        elif (group, entry) in schemas:
            schema = schemas[(group, entry)]
            value = OmegaConf.merge(value, OmegaConf.structured(schema))
        elif (path.parent / f"{entry}.yaml").is_file():
            base = _composed(path.parent / f"{entry}.yaml")
            if base is not None:
                value, schema = OmegaConf.merge(value, base[0]), base[1]
    return (value, schema) if schema is not None else None


def _unset(value: Any, body: Any) -> Any:
    """The part of ``value`` (plain data) that ``body`` (the file's own keys) does not set."""
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if isinstance(body, dict) and key in body:
            if isinstance(item, dict) and isinstance(body[key], dict) and "_target_" not in body[key]:
                rest = _unset(item, body[key])
                if rest:
                    out[key] = rest
            continue
        out[key] = item
    return out


def block(path: Path) -> str | None:
    """The comment block ``path`` should end with (None: the file names no settings dataclass)."""
    found = _composed(path)
    if found is None:
        return None
    value, schema = found
    own = OmegaConf.to_container(OmegaConf.create(_own_text(path)), resolve=False)
    own.pop("defaults", None)
    rest = _unset(OmegaConf.to_container(value, resolve=False, throw_on_missing=False, enum_to_str=True), own)
    if not rest:
        return None
    shown = yaml.safe_dump(rest, sort_keys=False, default_flow_style=None, width=100).rstrip("\n").splitlines()
    return "\n".join([f"{HEADER} ({schema.__name__}, {schema.__module__.replace('.', '/')}.py);",
                      "# set one here or with key=value (written by tests/config/shown_defaults.py):",
                      *(INDENT + line for line in shown)]) + "\n"


def shown_values(path: Path) -> dict[str, Any]:
    """The settings ``path``'s block shows, read back as plain data ({} without a block)."""
    lines = path.read_text().split("\n" + HEADER, 1)[1].splitlines()[2:] if HEADER in path.read_text() else []
    return yaml.safe_load("\n".join(line[len(INDENT):] for line in lines)) or {}


def expected_text(path: Path) -> str:
    """The whole file as it should read: its own lines, then its block."""
    own, shown = _own_text(path), block(path)
    return own if shown is None else own + shown


def main(argv: list[str]) -> int:
    """Rewrite every option's block; print the files changed."""
    for path in options():
        text = expected_text(path)
        if text != path.read_text():
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
