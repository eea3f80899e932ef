"""One declaration per setting: a default lives in its schema only, and a rule declared on a schema
field is the rule validation enforces, with the rule's own message.

- every YAML option under ``conf/`` (but ``conf/experiment/**``, whose values are chosen on purpose)
  sets only values that differ from its schema's defaults, and every ``_target_`` block in it that
  names one of advaudit's callables without a schema (a search method, a callback, an architecture, a
  world's dataset) sets only values that differ from the callable's own defaults (its signature);
- for every field with a ``ranged(...)`` rule (in every schema a YAML option uses, nested ones
  included), a composed config with a value outside the rule is refused by
  :func:`advaudit.config.validate` with exactly the line :meth:`Rule.problem` gives; the same for the
  rules declared by dotted key (``KEY_RULES``) and for a world of the user's own (``WorldRulesConf``).
"""

from __future__ import annotations

import dataclasses
import inspect
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import DictConfig, OmegaConf

from advaudit.confutil import named_object
from advaudit.validation import validate
from advaudit.config.ranges import RANGE, Rule
from advaudit.config.roots import KEY_RULES
from advaudit.registry import SCHEMAS
from advaudit.worlds.settings import WorldRulesConf
from advaudit.errors import AdvauditError
from tests.conftest import CONF_DIR, compose_config

#: which task and audit check a group's rules (validation checks an examiner and a world for the
#: worst-case audit, search methods for the error search)
GROUP_TASKS = {None: None, "dataset": ("train", []), "model": ("train", []), "paths": ("train", []),
               "audit": ("examine", []), "examiner": ("examine", []), "world": ("examine", []),
               "search": ("examine", ["audit=error_search"]), "search/method": ("examine", ["audit=error_search"])}


# -- the YAML options and their schemas ---------------------------------------------------------
def option_schema(path: Path, conf_dir: Path) -> type | None:
    """The schema dataclass a YAML option composes onto: a schema named in its ``defaults``, or that of
    an option of the same group it extends (``world/shapes_table1.yaml``: ``defaults: [shapes]``)."""
    group = path.parent.relative_to(conf_dir).as_posix()
    group = None if group == "." else group
    stored = {(g, name): schema for g, name, schema in SCHEMAS}
    data = yaml.safe_load(path.read_text()) or {}
    for entry in data.get("defaults", []) if isinstance(data, dict) else []:
        if not isinstance(entry, str) or "/" in entry or "@" in entry:
            continue
        if (group, entry) in stored:
            return stored[(group, entry)]
        sibling = path.with_name(f"{entry}.yaml")
        if sibling.is_file() and sibling != path:
            return option_schema(sibling, conf_dir)
    return None


def options(conf_dir: Path) -> list[tuple[Path, type]]:
    """(YAML file, schema) of every option under ``conf_dir`` outside ``experiment/`` that has a schema."""
    found = []
    for path in sorted(conf_dir.rglob("*.yaml")):
        if "experiment" in path.relative_to(conf_dir).parts:
            continue
        schema = option_schema(path, conf_dir)
        if schema is not None:
            found.append((path, schema))
    return found


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _same(default: Any, value: Any) -> bool:
    """``value`` as written in YAML equals the schema's ``default`` (numbers by value, enums by value)."""
    default = default.value if isinstance(default, Enum) else default
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) for v in (default, value)]
    if all(numbers):
        return default == value
    return type(default) is type(value) and default == value


def repeated_defaults(schema: type, data: dict[str, Any], path: str = "") -> list[str]:
    """Dotted keys of ``data`` (a YAML option's mapping) set to the value ``schema`` already gives them."""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    found = []
    for key, value in data.items():
        if key == "defaults" or key not in fields:
            continue
        default, where = _default(fields[key]), f"{path}{key}"
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            found += repeated_defaults(type(default), value, f"{where}.")
        elif isinstance(default, dict) and isinstance(value, dict):
            found += [f"{where}.{k}" for k, v in value.items() if k in default and _same(default[k], v)]
        elif default is not dataclasses.MISSING and _same(default, value):
            found.append(where)
    return found


def _schemas_by_target() -> dict[str, type]:
    """``_target_`` -> the settings dataclass that declares it (the parts whose schema names their class)."""
    found = {}
    for _, _, schema in SCHEMAS:
        target = {f.name: f.default for f in dataclasses.fields(schema)}.get("_target_")
        if isinstance(target, str) and target != "???":
            found[target] = schema
    return found


def repeated_signature_defaults(data: Any, path: str = "") -> list[str]:
    """Dotted keys of ``data`` (a YAML option's mapping, at any depth) that a ``_target_`` block of
    advaudit's own sets to the default its callable already has: its settings dataclass's where one
    declares it (a block nested in an option, not composed from the schema), else its signature's.
    The option's own top-level block with a schema is :func:`repeated_defaults`'s; third-party
    callables (torch's optimisers, Lightning) are not advaudit's declarations."""
    found: list[str] = []
    if isinstance(data, list):
        for i, value in enumerate(data):
            found += repeated_signature_defaults(value, f"{path}{i}.")
        return found
    if not isinstance(data, dict):
        return found
    target = data.get("_target_")
    if isinstance(target, str) and target.startswith("advaudit."):
        schema = _schemas_by_target().get(target)
        if schema is not None:
            plain = {key: value for key, value in data.items() if not str(key).startswith("_")}
            found += repeated_defaults(schema, plain, path) if path else []
        else:
            parameters = inspect.signature(named_object(target, path or "conf")).parameters
            for key, value in data.items():
                p = parameters.get(str(key))
                if p is not None and p.default is not inspect.Parameter.empty and _same(p.default, value):
                    found.append(f"{path}{key}")
    for key, value in data.items():
        found += repeated_signature_defaults(value, f"{path}{key}.")
    return found


#: repeats kept on purpose: the keys users override without ``+``. These blocks have no schema (a plain
#: mapping under ``model.arch``, ``world.dataset``), so Hydra's struct mode lets an override change only a
#: key the YAML wrote: with ``width`` taken out of ``model/resnet18.yaml``, the README's and the docs'
#: ``model.arch.width=32`` fails ("Could not override 'model.arch.width'"; only ``+model.arch.width=32``
#: composes), and the composed configs lose the key (the golden configs change). They go when the
#: architectures and the world's dataset get settings dataclasses of their own (then the schema holds the
#: key). :func:`test_each_kept_repeat_is_overridden_without_a_plus` pins the reason; a new repeat fails.
KEPT_FOR_OVERRIDES = {"model/alexnet.yaml": ["arch.width", "arch.hidden", "arch.dropout"],
                      "model/cnn.yaml": ["arch.hidden", "arch.dropout"], "model/mlp.yaml": ["arch.dropout"],
                      "model/resnet18.yaml": ["arch.width"], "model/resnet34.yaml": ["arch.width"],
                      "world/transforms.yaml": ["dataset.root"]}


def test_no_yaml_option_repeats_a_callables_default() -> None:
    """The options with no schema, and the ``_target_`` blocks inside any option, hold no value their
    callable's signature already gives (the signature, or a settings dataclass, is the one declaration)."""
    repeats = {}
    for path in sorted(CONF_DIR.rglob("*.yaml")):
        if "experiment" in path.relative_to(CONF_DIR).parts:
            continue
        keys = repeated_signature_defaults(yaml.safe_load(path.read_text()) or {})
        if keys:
            repeats[str(path.relative_to(CONF_DIR))] = keys
    new = {name: keys for name, keys in repeats.items() if keys != KEPT_FOR_OVERRIDES.get(name)}
    gone = sorted(set(KEPT_FOR_OVERRIDES) - set(repeats))
    assert not new, f"YAML options repeat their callables' defaults (keep them in one place): {new}"
    assert not gone, f"{gone} no longer repeat a default: take them out of KEPT_FOR_OVERRIDES"


@pytest.mark.parametrize("option", sorted(KEPT_FOR_OVERRIDES))
def test_each_kept_repeat_is_overridden_without_a_plus(option: str, tmp_path: Path) -> None:
    """What a kept repeat buys: ``<group>.<key>=<value>`` (no ``+``) composes and sets the value, as the
    docs write it; a key the block does not hold is refused that way."""
    group, name = option.removesuffix(".yaml").split("/")
    task = "train" if group == "model" else "examine"
    keys = KEPT_FOR_OVERRIDES[option]
    values = {key: "/elsewhere" if key.endswith("root") else 0.125 if "dropout" in key else 8 for key in keys}
    cfg = compose_config(task, [f"{group}={name}", *(f"{group}.{k}={v}" for k, v in values.items())], tmp_path)
    assert {key: OmegaConf.select(cfg, f"{group}.{key}") for key in keys} == values
    absent = f"{group}.{keys[0].rsplit('.', 1)[0]}.not_written_here=1"
    with pytest.raises(Exception, match="Could not override"):
        compose_config(task, [f"{group}={name}", absent], tmp_path)


def test_the_scan_finds_a_repeated_signature_default() -> None:
    """A planted repeat is found in a block without a schema, at any depth; a setting that differs, a
    third-party callable and a block with a schema are not."""
    data = {"progress": {"_target_": "pytorch_lightning.callbacks.TQDMProgressBar", "refresh_rate": 1},
            "world": {"dataset": {"_target_": "advaudit.data.fashion_mnist.FashionMNISTDataModule",
                                  "batch_size": 128, "val_fraction": 0.2}},
            "callbacks": [{"_target_": "advaudit.models.epoch_checkpoints.EpochTargets", "every_n_epochs": 1,
                           "log_to_wandb": False}]}
    assert repeated_signature_defaults(data) == ["world.dataset.batch_size", "callbacks.0.every_n_epochs"]


def test_no_yaml_option_repeats_a_schema_default() -> None:
    found = options(CONF_DIR)
    assert len(found) >= 30, f"only {len(found)} YAML options matched to a schema: the scan lost its way"
    repeats = {}
    for path, schema in found:
        data = yaml.safe_load(path.read_text()) or {}
        # an option that names itself (search=adversarial_distance: name: adversarial_distance) says which
        # of the group's choices it is, as its siblings do; that is not a repeated default
        keys = [key for key in repeated_defaults(schema, data) if not (key == "name" and data[key] == path.stem)]
        if keys:
            repeats[str(path.relative_to(CONF_DIR))] = keys
    assert not repeats, f"YAML options repeat their schema's defaults (set them in the schema only): {repeats}"


def test_the_scan_finds_a_repeated_default(tmp_path: Path) -> None:
    """A planted repeat is found, at any depth and through an option that extends another."""
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "mine.yaml").write_text(
        "defaults: [worst_case_schema, _self_]\nbudget: 500\nmode: weakness\nreport_budgets: [0, 100, 500]\n"
        "validity: {min_extent: 0.3, reference_min_prob: 0.6}\nn_instances: 5\nselection: random\n")
    (tmp_path / "audit" / "more.yaml").write_text("defaults: [mine]\ncalibrated: false\n")
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "m.yaml").write_text(
        "defaults: [meshes_schema, _self_]\nworld: {spp: 16, max_depth: 5}\nval_fraction: 0\nbatch_size: 64\n")
    found = {p.name: repeated_defaults(s, yaml.safe_load(p.read_text())) for p, s in options(tmp_path)}
    assert found == {"mine.yaml": ["budget", "mode", "validity.min_extent"],
                     "more.yaml": ["calibrated"], "m.yaml": ["world.spp", "val_fraction"]}


# -- every declared rule is the one validation enforces -----------------------------------------
def bad_value(rule: Rule) -> Any:
    """A value outside ``rule``."""
    if rule.choices is not None:
        value: Any = max(rule.choices) + 1 if all(isinstance(c, int) for c in rule.choices) else "bogus"
    elif rule.learning_rate:
        value = -1.0
    elif rule.low is not None:
        value = int(rule.low) - 1 if rule.integer else rule.low - 1.0
    else:
        value = int(rule.high) + 1 if rule.integer else rule.high + 1.0
    return {"val": value} if rule.each else value


def ranged_fields(schema: type, prefix: str) -> list[tuple[str, Rule]]:
    """(dotted path, Rule) of every ranged field of ``schema`` and of the schemas nested in it."""
    found = []
    for f in dataclasses.fields(schema):
        default = _default(f)
        if RANGE in f.metadata:
            found.append((f"{prefix}{f.name}", f.metadata[RANGE]))
        elif dataclasses.is_dataclass(default):
            found += ranged_fields(type(default), f"{prefix}{f.name}.")
    return found


def _override(value: Any) -> str:
    """``value`` in Hydra's override grammar."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_override(v)}" for k, v in value.items()) + "}"
    return str(value)


def _plain(value: Any) -> Any:
    value = OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value
    return value.value if isinstance(value, Enum) else value


def _refusal(cfg: DictConfig, task: str) -> str:
    with pytest.raises(AdvauditError) as refused:
        validate(cfg, task)
    return str(refused.value)


def package_of(path: Path) -> str | None:
    """The ``# @package`` header of a YAML option (its first line), ``None`` without one."""
    first = (path.read_text().splitlines() or [""])[0]
    return first.split("@package", 1)[1].strip() if first.startswith("# @package") else None


def rule_cases() -> list[tuple[str, list[str], list[str], dict[str, Rule]]]:
    """(case id, task, overrides, {dotted key: Rule}): one composed config per YAML option with rules.

    An option with a ``# @package`` header (a search method's block, ``search.<name>``) sits at that
    package and is composed by the registry's ``search/methods`` (:func:`advaudit.registry.register_configs`), so it is not selected."""
    cases, seen = [], set()
    for path, schema in options(CONF_DIR):
        group = path.parent.relative_to(CONF_DIR).as_posix()
        group = None if group == "." else group
        task, extra = GROUP_TASKS.get(group) or (path.stem, [])
        package = package_of(path)
        prefix = "" if group is None else f"{package or group}."
        rules = dict(ranged_fields(schema, prefix))
        if not rules or (schema, group) in seen:
            continue
        seen.add((schema, group))
        select = [] if group is None or package else [f"{group}={path.stem}"]
        cases.append((f"{group}/{path.stem}", task, [*extra, *select], rules))
    return cases


@pytest.mark.parametrize("case", rule_cases(), ids=lambda c: c[0])
def test_each_ranged_rule_is_refused_with_its_own_message(case, tmp_path: Path) -> None:
    _, task, selected, rules = case
    bad = [f"{key}={_override(bad_value(rule))}" for key, rule in rules.items()]
    cfg = compose_config(task, [*selected, *bad], tmp_path)
    message = _refusal(cfg, task)
    for key, rule in rules.items():
        expected = rule.problem(key, _plain(OmegaConf.select(cfg, key)))
        assert expected is not None, f"{key}={bad_value(rule)} is inside its own rule"
        assert expected in message, f"{key}: validation does not print {expected!r}; it printed {message!r}"


def test_rule_cases_cover_every_group() -> None:
    groups = {case[0].split("/")[0] for case in rule_cases()}
    assert {"None", "dataset", "audit", "examiner", "world", "search"} <= groups


def test_each_key_rule_is_refused_with_its_own_message(tmp_path: Path) -> None:
    """The rules of keys in blocks no schema types: set on a composed train config."""
    cfg = compose_config("train", ["model=generator"], tmp_path)
    OmegaConf.set_struct(cfg, False)
    for key, rule in KEY_RULES.items():
        OmegaConf.update(cfg, key, bad_value(rule), force_add=True)
    message = _refusal(cfg, "train")
    for key, rule in KEY_RULES.items():
        expected = rule.problem(key, bad_value(rule))
        assert expected is not None and expected in message, f"{key}: {expected!r} not in {message!r}"


def test_a_world_of_the_users_own_is_held_to_the_world_rules(tmp_path: Path) -> None:
    rules = dict(ranged_fields(WorldRulesConf, "world."))
    block = {"_target_": "my_pkg.World", **{key.split(".")[1]: bad_value(rule) for key, rule in rules.items()}}
    cfg = compose_config("examine", ["~world", f"+world={_override(block)}"], tmp_path)
    assert OmegaConf.get_type(cfg.world) is dict  # untyped: no schema of advaudit's
    message = _refusal(cfg, "examine")
    for key, rule in rules.items():
        assert (expected := rule.problem(key, bad_value(rule))) in message, f"{expected!r} not in {message!r}"


# -- a part's constructor and its settings agree ------------------------------------------------
#: (callable, argument): a difference kept on purpose. A world built from config renders on the run's
#: ``device`` (the schemas' ``WORLD_DEVICE``, ``${device}``: ``ExamineConf.device``, ``auto``); built directly
#: from Python it stays on the CPU, as ``advaudit.load_target`` and the examiners do.
SIGNATURE_DIFFERS = {("advaudit.worlds.shapes.ShapeWorld", "device"), ("advaudit.worlds.meshes.MeshWorld", "device"),
                     ("advaudit.worlds.transforms.TransformWorld", "device")}


def test_each_constructor_defaults_to_its_settings() -> None:
    """A part with a settings dataclass takes its defaults from it: every keyword default of the class its
    ``_target_`` names is that dataclass's default, or None (meaning: the dataclass's)."""
    differ = []
    for target, schema in _schemas_by_target().items():
        fields = {f.name: _default(f) for f in dataclasses.fields(schema)}
        for name, parameter in inspect.signature(named_object(target, "conf")).parameters.items():
            if name not in fields or parameter.default in (inspect.Parameter.empty, None):
                continue
            if (target, name) not in SIGNATURE_DIFFERS and not _same(fields[name], parameter.default):
                differ.append(f"{target}({name}={parameter.default!r}) but {schema.__name__}.{name}={fields[name]!r}")
    assert not differ, f"constructors default to other values than their settings: {differ}"
    assert len(_schemas_by_target()) >= 15


def test_a_world_follows_the_runs_device(tmp_path: Path) -> None:
    """``device`` is declared once (``ExamineConf.device``): every built-in world composes to it, whatever
    the run's value; ``world.device`` still pins one world."""
    for world in ("shapes", "transforms", "meshes"):
        for device in ("auto", "cpu"):
            cfg = compose_config("examine", [f"world={world}", f"device={device}"], tmp_path)
            assert cfg.world.device == device, (world, device)
        assert compose_config("examine", [f"world={world}", "world.device=cpu"], tmp_path).world.device == "cpu"
