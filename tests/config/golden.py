"""Every experiment config and every README command, composed and resolved as plain data.

The golden file ``tests/config/data/golden_configs.json`` holds what these compose to; the test
``tests/config/test_golden_configs.py`` recomposes them and names every key whose value changed.
Regenerate it (only when a change of a composed value is meant, and said so) with::

    PYTHONPATH=$PWD python -m tests.config.golden

Each entry is keyed ``experiment:<name>`` (composed under ``train`` for ``train_*`` experiments,
``examine`` otherwise) or ``readme:<entry> <overrides>`` (one per combination of a ``-m`` sweep).
Interpolations that cannot resolve outside a Hydra run (``${hydra:runtime.output_dir}``) are kept
as written; ``ADVAUDIT_ROOT`` and ``WANDB_MODE`` are fixed so what depends on them resolves the
same everywhere.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, ListConfig, OmegaConf

import advaudit.registry  # noqa: F401  (registers the schemas)

REPO = Path(__file__).resolve().parents[2]
CONF_DIR = REPO / "conf"
GOLDEN = Path(__file__).with_name("data") / "golden_configs.json"
#: the Hydra settings a user's config can change (the rest is Hydra's own bookkeeping)
HYDRA_KEYS = ("run", "sweep", "callbacks", "launcher", "sweeper", "mode")
_COMMAND = re.compile(r"(?:^|\s)(train|examine)\.py\s+(.*)$")
_PLACEHOLDER = re.compile(r"<([^<>]*)>")


def _placeholder(match: re.Match[str]) -> str:
    """``<target.pt>`` (a value the user fills in; not valid override syntax) -> ``target_pt``."""
    return re.sub(r"\W+", "_", match.group(1)).strip("_")


def experiments() -> list[tuple[str, str]]:
    """(entry config, experiment name) of every ``conf/experiment/**`` option."""
    found = []
    for path in sorted((CONF_DIR / "experiment").rglob("*.yaml")):
        name = path.relative_to(CONF_DIR / "experiment").with_suffix("").as_posix()
        found.append(("train" if path.stem.startswith("train_") else "examine", name))
    return found


def readme_commands(readme: Path = REPO / "README.md") -> list[tuple[str, list[str]]]:
    """(entry config, overrides) of each ``train.py``/``examine.py`` line of the README's code blocks.

    Continuation lines (ending in a backslash) are joined, trailing ``#`` comments dropped and
    placeholders (``<target.pt>``) written as plain words (``target_pt``); a
    sweep (``-m``, or a ``target=list:FILE`` command that adds it) is expanded into one command per
    combination. Commands that name a config folder
    that does not exist (``--config-dir my_conf``) cannot compose and are left out.
    """
    commands: list[tuple[str, list[str]]] = []
    in_code, pending = False, ""
    for raw in readme.read_text().splitlines():
        if raw.lstrip().startswith("```"):
            in_code, pending = not in_code, ""
            continue
        if not in_code:
            continue
        line = pending + raw
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        match = _COMMAND.search(line)
        if match is None:
            continue
        words = shlex.split(_PLACEHOLDER.sub(_placeholder, match.group(2)), comments=True)
        if "--config-dir" in words:
            continue
        overrides = [w for w in words if w != "-m"]
        for combination in _expand(overrides):
            commands.append((match.group(1), combination))
    return commands


def _expand(overrides: list[str]) -> list[list[str]]:
    """The overrides of every job of a ``-m`` sweep (comma lists expanded, in Hydra's order)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = []
    for override in parsed:
        if override.is_sweep_override():
            key = override.get_key_element()
            choices.append([f"{key}={value}" for value in override.sweep_string_iterator()])
        else:
            choices.append([override.input_line])
    return [list(combination) for combination in itertools.product(*choices)]


def composed(config_name: str, overrides: list[str]) -> dict[str, Any]:
    """``conf/<config_name>.yaml`` with ``overrides``, resolved where it can be, as plain data."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=overrides, return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    HydraConfig.instance().set_config(cfg)  # so ${hydra:runtime.cwd} resolves as in a run
    hydra = cfg.hydra
    with_hydra = {key: _plain(cfg, f"hydra.{key}", hydra[key]) for key in HYDRA_KEYS if key in hydra}
    body = {key: _plain(cfg, key, cfg[key]) for key in cfg if key != "hydra"}
    return {**body, "hydra": with_hydra}


def _plain(root: DictConfig, path: str, node: Any) -> Any:
    """``node`` (at ``path`` of ``root``) as plain data: interpolations resolved where they can be."""
    if isinstance(node, (DictConfig, ListConfig)) and node._is_interpolation():
        return _resolved(root, path, node._value())
    if isinstance(node, DictConfig):
        if node._is_none():
            return None
        keys = list(node.keys())
        return {str(k): _plain(root, f"{path}.{k}", node._get_node(k)) for k in keys}
    if isinstance(node, ListConfig):
        if node._is_none():
            return None
        return [_plain(root, f"{path}[{i}]", node._get_node(i)) for i in range(len(node))]
    return _resolved(root, path, node._value() if hasattr(node, "_value") else node)


def _resolved(root: DictConfig, path: str, raw: Any) -> Any:
    """The value at ``path`` resolved, or ``raw`` (as written) when only a running Hydra job resolves it."""
    if isinstance(raw, str) and "${now:" in raw:
        return raw  # the clock: differs on every composition
    try:
        value = OmegaConf.select(root, path, throw_on_resolution_failure=True)
    except Exception:  # noqa: BLE001  (an interpolation only a running Hydra job resolves)
        return raw
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True, enum_to_str=True)
    return value.name if hasattr(value, "name") and not isinstance(value, str) else value


def all_configs() -> dict[str, Any]:
    """Every experiment and README command, composed (the golden file's content)."""
    saved = dict(os.environ)
    os.environ.update(ADVAUDIT_ROOT="/ADVAUDIT_ROOT", WANDB_MODE="offline")
    os.environ.pop("ADVAUDIT_THREADS", None)
    try:
        configs: dict[str, Any] = {}
        for entry, name in experiments():
            configs[f"experiment:{name}"] = composed(entry, [f"experiment={name}"])
        for entry, overrides in readme_commands():
            configs[f"readme:{entry} {' '.join(overrides)}"] = composed(entry, overrides)
        return configs
    finally:
        os.environ.clear()
        os.environ.update(saved)


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Each key path whose value differs between ``old`` and ``new``, with both values."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(f"{where}: removed (was {old[key]!r})")
            elif key not in old:
                out.append(f"{where}: added ({new[key]!r})")
            else:
                out.extend(differences(old[key], new[key], where))
        return out
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


if __name__ == "__main__":
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(all_configs(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
