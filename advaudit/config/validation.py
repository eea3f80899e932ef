"""One validation step before a task starts: the rules that relate several config keys, and files.

Types and choices are checked by Hydra at composition (:mod:`advaudit.config.schemas`). A rule on one
setting is declared next to its schema field (``ranged(...)``; :mod:`advaudit.config.ranges`), or,
for keys of blocks another library defines (trainer, optimizer), in ``schemas.KEY_RULES``; here,
before any data is loaded or any model scored, :func:`validate` checks those rules where the config
uses them (an untyped block, e.g. ``audit.dataset={_target_: ...}`` or a world of the user's own, is
held to the schema its ``_target_`` names, else to ``DatasetConf`` / ``WorldRulesConf``) and, itself,
only what no single field can say:

- keys tied together: report budgets within ``audit.budget``, ``audit.budget <= audit.pool_size``,
  ``audit.report_at`` within the budget, ``examiner.raw_samples >= examiner.restarts``, warnings on
  budgets an examiner cannot use (RL's first update, BO's ``n_init``), ``audit.n_instances`` for
  ``selection=random``, and a tabular model on a table;
- keys checked against another key's value: factor names (``world.factors``, ``dataset.factors``,
  ``audit.fixed_random``, ``audit.factor_share``, ``audit.base_overrides``) against the factors of
  the world the config names, each factor's ``low <= high``, compared search methods, the keys of
  ``model.adversarial``, required keys left ``???``, a target and a generator where the audit
  needs them, ``audit.budget >= 1`` (its message names ``audit.budget_unit``; the report budgets'
  check needs it), and the entries of the mappings ``audit.pixel`` and ``audit.fault_feature``
  (their keys name baselines and features);
- files: every target, generator, judge, reference, transfer target, CSV and image folder the run
  needs is there and is what it should be (:func:`advaudit.files.describe_path`);
- keys nothing reads (:mod:`advaudit.config.known_keys`).

Every problem found is reported together, in one message, each naming its key and the nearest valid
value; settings that are legal but probably not what the user meant get a one-line warning. Nothing
is changed: a request is honoured exactly or refused.
"""

from __future__ import annotations

import importlib
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping

from omegaconf import DictConfig, ListConfig, OmegaConf

from advaudit.config.known_keys import unknown_argument_problems, unknown_key_problems
from advaudit.config.ranges import key_rule_problems, range_problems
from advaudit.config.schemas import (KEY_RULES, SCHEMAS, WORLD_REFERENCE, DatasetConf, ExamineConf, SklearnModelConf,
                                     TrainConf, WorldRulesConf)
from advaudit.confutil import target_block_keys
from advaudit.errors import AdvauditError, unknown_keys_message, warn
from advaudit.files import describe_path
from advaudit.models.imported.spec import ADVAUDIT_FILE_KEYS, parse_target_spec

#: factor names of the worlds advaudit ships, by ``_target_`` (other worlds are checked by themselves)
_WORLD_FACTORS = {
    "advaudit.worlds.shapes.ShapeWorld": ("advaudit.worlds.shapes.world", "DEFAULT_FACTORS"),
    "advaudit.worlds.shapes.world.ShapeWorld": ("advaudit.worlds.shapes.world", "DEFAULT_FACTORS"),
    "advaudit.worlds.transforms.TransformWorld": ("advaudit.worlds.transforms", "GEOMETRIC+COLOUR"),
    "advaudit.data.shapes.ShapesDataModule": ("advaudit.worlds.shapes.world", "DEFAULT_FACTORS"),
    "advaudit.worlds.meshes.MeshWorld": ("advaudit.worlds.shapes.world", "DEFAULT_FACTORS"),
    "advaudit.data.meshes.MeshesDataModule": ("advaudit.worlds.shapes.world", "DEFAULT_FACTORS"),
}
TARGETLESS_AUDITS = ("gallery",)
#: the training function of scikit-learn black boxes, which fit tables only
SKLEARN_TRAINING = SklearnModelConf().train._target_
#: the settings of PGD adversarial training (``model.adversarial``: advaudit.models.classifier.pgd_attack)
PGD_KEYS = ("norm", "eps", "steps", "step_size", "random_start")


class Checks:
    """Collects the problems and warnings of one config; :meth:`raise_if_any` reports them at once."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def require(self, condition: bool, message: str) -> bool:
        if not condition:
            self.problems.append(message)
        return bool(condition)

    def warn(self, condition: bool, message: str) -> None:
        if condition:
            self.warnings.append(message)

    def ranges(self, node: Any, path: str, schema: type | None = None, deep: bool = True) -> None:
        """The range rules of every schema field in ``node`` (at ``path``; ``schema`` for an untyped
        ``node``): :mod:`advaudit.config.ranges`."""
        self.problems += range_problems(node, path, self.warnings, schema=schema, deep=deep)

    def raise_if_any(self) -> None:
        for message in self.warnings:
            warn(message)
        if len(self.problems) == 1:
            raise AdvauditError(self.problems[0])
        if self.problems:
            raise AdvauditError(f"{len(self.problems)} problems in the config: " + "; ".join(self.problems))


def validate(cfg: DictConfig, task: str) -> list[str]:
    """Check ``cfg`` for ``task`` (``train`` or ``examine``); returns the warnings it logged.

    Raises:
        AdvauditError: listing every problem found, each with its key and a valid value.
    """
    checks = Checks()
    checks.ranges(cfg, "", TrainConf if task == "train" else ExamineConf, deep=False)
    checks.problems += unknown_key_problems(cfg, task)
    if task == "train":
        _check_train(cfg, checks)
    elif task == "examine":
        _check_examine(cfg, checks)
    if not checks.problems:  # imports the _target_ callables: only when the task is about to run
        checks.problems += unknown_argument_problems(cfg, task)
    checks.raise_if_any()
    return checks.warnings


def plain_config(cfg: DictConfig) -> DictConfig:
    """The validated config with schema enums as plain strings (what the tasks compare against).

    Interpolations are kept (``${hydra:...}`` resolves during the run); the struct flag is kept so
    a misspelt key still raises.
    """
    container = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    plain = OmegaConf.create(container)
    OmegaConf.set_struct(plain, OmegaConf.is_struct(cfg) is not False)
    return plain


# -- train ----------------------------------------------------------------------------------------
def _check_train(cfg: DictConfig, checks: Checks) -> None:
    model = cfg.get("model")
    checks.problems += key_rule_problems(cfg, KEY_RULES, checks.warnings)
    if model is not None:
        adversarial = _get(model, "adversarial")
        if isinstance(adversarial, DictConfig):
            unknown = [str(k) for k in adversarial.keys() if k not in PGD_KEYS]
            checks.require(not unknown, unknown_keys_message("model.adversarial", unknown, PGD_KEYS))
        quality = _get(model, "quality_target")
        if quality:
            _check_file(checks, quality, "model.quality_target", "a classifier target.pt written by train.py")
    dataset = cfg.get("dataset")
    if model is not None and _get(_get(model, "train"), "_target_") == SKLEARN_TRAINING and dataset is not None:
        checks.require(str(_get(dataset, "_target_")).endswith("TabularDataModule"),
                       f"model={_get(model, 'name')} is a black box for tables; use dataset=tabular "
                       "(or a torch model for images)")
    _check_dataset(dataset, "dataset", checks)


def _check_dataset(dataset: Any, key: str, checks: Checks) -> None:
    if dataset is None or not isinstance(dataset, DictConfig):
        return
    for name in ("root", "name", "_target_"):
        checks.require(not OmegaConf.is_missing(dataset, name) if name in dataset else True,
                       f"{key}.{name} is required; set {key}.{name}=<value>")
    checks.ranges(dataset, key, _schema_of("dataset", dataset, DatasetConf))
    _check_factors(dataset, f"{key}.factors", "factors", checks)
    _check_factors(dataset, f"{key}.eval_factors", "eval_factors", checks)
    root = _get(dataset, "root") if "root" in dataset and not OmegaConf.is_missing(dataset, "root") else None
    target = str(_get(dataset, "_target_") or "")
    if root and target.endswith("ImageFolderDataModule"):
        _check_dir(checks, root, f"{key}.root", "a folder of class sub-folders with images")
    path = _get(dataset, "path")
    if path:
        _check_file(checks, path, f"{key}.path", "a CSV file with a header row")


# -- examine --------------------------------------------------------------------------------------
def _check_examine(cfg: DictConfig, checks: Checks) -> None:
    audit = cfg.get("audit")
    if audit is None:
        return
    name = str(_get(audit, "name"))
    target = cfg.get("target")
    if name not in TARGETLESS_AUDITS:
        if checks.require(target is not None, "no target given; add target=<path/to/target.pt> (written by "
                          "train.py under <run dir>/checkpoints/)"):
            _check_target(checks, target, cfg.get("seed", 0))
    world = cfg.get("world")
    if name in ("worst_case", "gallery") and world is not None:
        _check_world(world, checks)
    if name == "worst_case":
        _check_worst_case(audit, cfg.get("examiner"), world, checks)
    elif name == "error_search":
        _check_error_search(audit, cfg.get("search"), checks)
    elif name == "fault_tests":
        _check_fault_tests(audit, cfg.get("generator"), checks)
    elif name == "gallery":
        checks.ranges(audit, "audit")
        _check_factor_names(world, (_plain(_get(audit, "base_overrides")) or {}).keys(), "audit.base_overrides", checks)
    if name in ("evaluate", "error_search"):
        _check_audit_dataset(_get(audit, "dataset"), checks)


def _check_audit_dataset(dataset: Any, checks: Checks) -> None:
    """``audit.dataset``: null (the target's own data) or a dataset block with ``_target_``."""
    if dataset is None:
        return
    if isinstance(dataset, str):
        checks.problems.append(f"audit.dataset={dataset} names no dataset config; to audit on conf/dataset/"
                               f"{dataset}.yaml write +dataset@audit.dataset={dataset} (then "
                               "audit.dataset.<key>=<value> changes its settings)")
        return
    if checks.require(isinstance(dataset, DictConfig) and "_target_" in dataset,
                      f"audit.dataset={_plain(dataset)!r} is not a dataset config; give a block with _target_ "
                      "(e.g. audit.dataset={_target_: advaudit.data.fashion_mnist.FashionMNISTDataModule}) or "
                      "+dataset@audit.dataset=<name of a conf/dataset option>"):
        _check_dataset(dataset, "audit.dataset", checks)


def _check_world(world: DictConfig, checks: Checks) -> None:
    checks.ranges(world, "world", _schema_of("world", world, WorldRulesConf))
    _check_factors(world, "world.factors", "factors", checks)


def _check_worst_case(audit: DictConfig, examiner: DictConfig | None, world: DictConfig | None,
                      checks: Checks) -> None:
    budget = _get(audit, "budget")
    unit = str(_get(audit, "budget_unit") or "queries")
    q = int(_get(examiner, "q") or 1) if examiner is not None else 1
    checks.ranges(audit, "audit")
    if examiner is not None:
        checks.ranges(examiner, "examiner")
        _check_examiner(examiner, checks)
    if checks.require(isinstance(budget, int) and budget >= 1,
                      f"audit.budget={budget}: the examination budget ({unit} per instance) must be >= 1; "
                      "the nearest valid value is 1"):
        if unit == "queries" and str(_get(examiner, "name")) == "rl":
            checks.warn(budget <= q, f"audit.budget={budget} queries is at most one RL iteration of examiner.q={q}: "
                        "the policy is never updated before its last proposals, so E_T is that of its "
                        "untrained (near-uniform) policy")
        n_init = _get(examiner, "n_init") if examiner is not None else None
        if n_init is not None and unit == "queries":
            checks.warn(budget <= n_init, f"audit.budget={budget} <= examiner.n_init={n_init}: BO only ever "
                        "proposes its random initial points")
        reports = _plain(_get(audit, "report_budgets")) or []
        outside = [b for b in reports if b > budget or b < 0]
        inside = sorted({b for b in reports if 0 <= b <= budget} | {budget})
        checks.require(not outside, f"audit.report_budgets={reports} has {outside} outside [0, audit.budget={budget}] "
                       f"({unit}); report at budgets within it (e.g. audit.report_budgets={inside}) or raise "
                       f"audit.budget to {max(outside + [budget])}")
        checks.warn(len(set(reports)) != len(reports), f"audit.report_budgets={reports} repeats a budget")
    shard, shards = _get(audit, "shard"), _get(audit, "shards")
    if isinstance(shard, int) and isinstance(shards, int):
        checks.require(shard < shards, f"audit.shard={shard} is not one of the {shards} shards (audit.shards); "
                       f"use audit.shard in 0..{shards - 1}")
    if str(_get(audit, "selection")) == "random":
        checks.require(_get(audit, "n_instances") is not None,
                       "audit.selection=random needs audit.n_instances=<how many instances to draw>")
    validity = _get(audit, "validity")
    if validity is not None:
        reference = _get(validity, "reference")
        if reference and reference != WORLD_REFERENCE:
            _check_file(checks, reference, "audit.validity.reference", "a target.pt used as the reference judge")
    fixed = _plain(_get(audit, "fixed_random")) or []
    _check_factor_names(world, fixed, "audit.fixed_random", checks)
    share = _plain(_get(audit, "factor_share"))
    if share:
        checks.require("factor" in share, "audit.factor_share needs a factor: {factor: <name>, abs_above: <value>}")
        _check_factor_names(world, [share["factor"]] if "factor" in share else [], "audit.factor_share.factor", checks)


def _check_examiner(examiner: DictConfig, checks: Checks) -> None:
    """The examiner's keys that tie together (single-field ranges: its schema)."""
    raw, restarts = _get(examiner, "raw_samples"), _get(examiner, "restarts")
    if isinstance(raw, int) and isinstance(restarts, int):
        checks.require(raw >= restarts, f"examiner.raw_samples={raw} < examiner.restarts={restarts}; "
                       f"set examiner.raw_samples>={restarts}")


def _check_error_search(audit: DictConfig, search: DictConfig | None, checks: Checks) -> None:
    """The error search's keys that tie together (single-field ranges: ``ErrorSearchAuditConf``)."""
    pool_size, budget = _get(audit, "pool_size"), _get(audit, "budget")
    checks.ranges(audit, "audit")
    # each tie needs its keys inside their own rules (budget >= 1, pool_size >= 1), reported by ranges
    ok_pool = isinstance(pool_size, int) and pool_size >= 1
    ok_budget = isinstance(budget, int) and budget >= 1
    if ok_pool and ok_budget:
        checks.require(budget <= pool_size, f"audit.budget={budget} queries exceed audit.pool_size={pool_size} "
                       f"items; set audit.budget<={pool_size} or audit.pool_size>={budget}")
    if ok_budget:
        report_at = _plain(_get(audit, "report_at")) or []
        beyond = [k for k in report_at if k > budget]
        checks.require(not beyond, f"audit.report_at {beyond} exceed audit.budget={budget}; report at k <= {budget} "
                       f"or raise audit.budget to {max(beyond) if beyond else budget}")
        checks.require(all(k >= 1 for k in report_at), f"audit.report_at={report_at}: k counts queries, from 1")
    if search is not None:
        methods = target_block_keys(search)  # a method is a block with _target_ under search (advaudit.search.methods)
        name = _get(search, "name")
        checks.require(name in methods, f"search.name={name} is not a method in search; use one of {methods} "
                       f"(search=<name>), or add your own with +search/method=<name> (docs/extending.md)")
        unknown = [m for m in _plain(_get(audit, "compare")) or [] if m not in methods]
        checks.require(not unknown, f"audit.compare names unknown methods {unknown}; use {methods}, or add "
                       f"your own with +search/method=<name> (docs/extending.md)")
        checks.ranges(search, "search")


def _check_fault_tests(audit: DictConfig, generator: Any, checks: Checks) -> None:
    if checks.require(generator is not None, "audit=fault_tests needs generator=<path/to/generator.pt> "
                      "(written by train.py model=generator)"):
        _check_file(checks, generator, "generator", "a generator.pt written by train.py model=generator")
    checks.ranges(audit, "audit")
    for i, path in enumerate(_plain(_get(audit, "transfer_targets")) or []):
        _check_file(checks, path, f"audit.transfer_targets[{i}]", "a target.pt written by train.py")
    features = _plain(_get(audit, "fault_feature")) or []
    for i, feature in enumerate(features if isinstance(features, list) else [features]):
        key = "audit.fault_feature" + (f"[{i}]" if isinstance(features, list) else "")
        if checks.require(isinstance(feature, Mapping) and "kind" in feature,
                          f"{key}={feature!r} must be {{kind: <feature>, direction: +1|-1}}"):
            checks.require(feature.get("direction", 1) in (1, -1),
                           f"{key}.direction={feature.get('direction')!r}; use +1 or -1")
    judge = _get(audit, "judge")
    if judge:
        _check_file(checks, judge, "audit.judge", "a classifier target.pt of another architecture")
    for kind, settings in (_plain(_get(audit, "pixel")) or {}).items():
        checks.require(kind in ("l2", "linf"), f"audit.pixel.{kind}: unknown pixel baseline; use l2 or linf")
        if isinstance(settings, Mapping):
            eps, steps = settings.get("eps"), settings.get("steps")
            checks.require(eps is None or (isinstance(eps, (int, float)) and eps > 0), f"audit.pixel.{kind}.eps={eps} must be > 0")
            checks.require(steps is None or (isinstance(steps, int) and steps >= 1), f"audit.pixel.{kind}.steps={steps} must be >= 1")


# -- factors ------------------------------------------------------------------------------------
def _known_factors(node: Any) -> list[str] | None:
    """Factor names of the world (or shapes dataset) ``node`` builds; ``None`` if unknown."""
    target = str(_get(node, "_target_") or "") if node is not None else ""
    if target not in _WORLD_FACTORS:
        return None
    module, names = _WORLD_FACTORS[target]
    loaded = importlib.import_module(module)
    return [f.name for part in names.split("+") for f in getattr(loaded, part)]


def _check_factor_names(world: Any, names: Iterable[str], key: str, checks: Checks) -> None:
    known = _known_factors(world)
    if known is None:
        return
    unknown = [n for n in names if n not in known]
    checks.require(not unknown, f"{key} names unknown factors {unknown}; this world's factors are {known}")


def _check_factors(node: Any, key: str, field: str, checks: Checks) -> None:
    """``{name: [low, high] | value | {low, high}}``: known names, two bounds, ``low <= high``."""
    factors = _plain(_get(node, field))
    if not factors:
        return
    if not checks.require(isinstance(factors, Mapping), f"{key}={factors!r} must map factor names to "
                          "[low, high] or one value, e.g. {camera_elevation: [-30, 30]}"):
        return
    _check_factor_names(node, factors.keys(), key, checks)
    for name, value in factors.items():
        if isinstance(value, Mapping):
            low, high = value.get("low"), value.get("high")
        elif isinstance(value, list):
            if not checks.require(len(value) == 2, f"{key}.{name}={value} must be [low, high] or one value"):
                continue
            low, high = value
        else:
            low = high = value
        numbers = [v for v in (low, high) if v is not None]
        if not checks.require(all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers),
                              f"{key}.{name}={value} must be numbers"):
            continue
        if low is not None and high is not None:
            checks.require(low <= high, f"{key}.{name} has low={low} > high={high}; swap the bounds: "
                           f"{key}.{name}=[{high}, {low}]")


# -- files --------------------------------------------------------------------------------------
def _check_target(checks: Checks, target: Any, seed: Any) -> None:
    """A target path must be a file; a target block must be a valid :class:`TargetSpec` (its files present)."""
    if not isinstance(target, (DictConfig, Mapping)):
        _check_file(checks, target, "target", "a target.pt written by train.py or `advaudit import`")
        return
    block = OmegaConf.to_container(target, resolve=True) if isinstance(target, DictConfig) else dict(target)
    if block.get("path") is not None:
        _check_file(checks, block["path"], "target.path", "the model file")
    if set(block) <= set(ADVAUDIT_FILE_KEYS):
        return  # an advaudit target file named by a block: it describes itself
    try:
        parse_target_spec(block, int(seed) if isinstance(seed, int) else 0)
    except AdvauditError as error:
        checks.problems.append(str(error))


def _check_file(checks: Checks, path: Any, key: str, expected: str) -> None:
    """``path`` must be an existing, non-empty file; the message says what it is instead."""
    if isinstance(path, (list, ListConfig)):
        checks.problems.append(f"{key} is a list {list(path)}; give one path (sweep several with -m "
                               f"{key}=a.pt,b.pt)")
        return
    p = Path(str(path)).expanduser()
    what = describe_path(p)
    checks.require(what == "a file", f"{key}={p} is {what}; expected {expected}")


def _check_dir(checks: Checks, path: Any, key: str, expected: str) -> None:
    p = Path(str(path)).expanduser()
    what = describe_path(p)
    checks.require(what == "a directory", f"{key}={p} is {what}; expected {expected}")


# -- config access --------------------------------------------------------------------------------
def _schema_of(group: str, node: Any, fallback: type) -> type:
    """The schema of ``group`` whose ``_target_`` is ``node``'s (an untyped block naming one of
    advaudit's parts), else ``fallback`` (the rules a part of the user's own is held to)."""
    target = _get(node, "_target_")
    for schema_group, _, schema in SCHEMAS:
        if schema_group == group and getattr(schema, "_target_", None) == target:
            return schema
    return fallback


def _get(node: Any, key: str) -> Any:
    """``node[key]`` as plain data (enums as strings), ``None`` when absent."""
    if node is None:
        return None
    if isinstance(node, DictConfig):
        if key not in node or OmegaConf.is_missing(node, key):
            return None
        value = node[key]
    elif isinstance(node, Mapping):
        value = node.get(key)
    else:
        return None
    return value.value if isinstance(value, Enum) else value


def _plain(value: Any) -> Any:
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True, enum_to_str=True)
    return value
