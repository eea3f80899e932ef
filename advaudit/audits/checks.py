"""The audits' cross-key checks (their settings' :meth:`~advaudit.config.part.Part.check`), run once before a task.

Each audit checks its own keys that tie together, and the parts it reads (the world and the examiner
of the worst case, the search methods of the error search, the generator of the fault tests);
single-field rules sit next to the fields (``advaudit/audits/settings.py``).
"""

from __future__ import annotations

from typing import Any, Mapping

from omegaconf import DictConfig

from advaudit.config.validation import Context, get, plain
from advaudit.confutil import target_block_keys
from advaudit.data.settings import DatasetConf
from advaudit.worlds.settings import WORLD_REFERENCE, WorldRulesConf


def check_world(context: Context) -> None:
    """The world an audit renders (``world``): its own check, or a world of the user's own held to
    :class:`~advaudit.worlds.settings.WorldRulesConf`."""
    context.check_part("world", context.cfg.get("world"), "world", WorldRulesConf)


def check_worst_case(audit: DictConfig, context: Context) -> None:
    """Budgets, report budgets, shards, ``selection=random``, the reference judge and factor names;
    the world's and the examiner's checks."""
    world, examiner = context.cfg.get("world"), context.cfg.get("examiner")
    check_world(context)
    context.check_part("examiner", examiner, "examiner")
    budget, unit = get(audit, "budget"), str(get(audit, "budget_unit") or "queries")
    if context.require(isinstance(budget, int) and budget >= 1,
                       f"audit.budget={budget}: the examination budget ({unit} per instance) must be >= 1; "
                       "the nearest valid value is 1"):
        reports = plain(get(audit, "report_budgets")) or []
        outside = [b for b in reports if b > budget or b < 0]
        inside = sorted({b for b in reports if 0 <= b <= budget} | {budget})
        context.require(not outside, f"audit.report_budgets={reports} has {outside} outside [0, audit.budget="
                        f"{budget}] ({unit}); report at budgets within it (e.g. audit.report_budgets={inside}) or "
                        f"raise audit.budget to {max(outside + [budget])}")
        context.warn(len(set(reports)) != len(reports), f"audit.report_budgets={reports} repeats a budget")
    check_shards(audit, context)
    if str(get(audit, "selection")) == "random":
        context.require(get(audit, "n_instances") is not None,
                        "audit.selection=random needs audit.n_instances=<how many instances to draw>")
    reference = get(get(audit, "validity"), "reference")
    if reference and reference != WORLD_REFERENCE:
        context.file(reference, "audit.validity.reference", "a target.pt used as the reference judge")
    context.known_factor_names("world", world, plain(get(audit, "fixed_random")) or [], "audit.fixed_random")
    share = plain(get(audit, "factor_share"))
    if share:
        context.require("factor" in share, "audit.factor_share needs a factor: {factor: <name>, abs_above: <value>}")
        context.known_factor_names("world", world, [share["factor"]] if "factor" in share else [],
                                   "audit.factor_share.factor")


def check_gallery(audit: DictConfig, context: Context) -> None:
    """The world's check and the factors ``audit.base_overrides`` names."""
    check_world(context)
    context.known_factor_names("world", context.cfg.get("world"), (plain(get(audit, "base_overrides")) or {}).keys(),
                               "audit.base_overrides")


def check_shards(audit: DictConfig, context: Context) -> None:
    """``audit.shard`` is one of the ``audit.shards`` shards."""
    shard, shards = get(audit, "shard"), get(audit, "shards")
    if isinstance(shard, int) and isinstance(shards, int):
        context.require(shard < shards, f"audit.shard={shard} is not one of the {shards} shards (audit.shards); "
                        f"use audit.shard in 0..{shards - 1}")


def check_error_search(audit: DictConfig, context: Context) -> None:
    """Budget within the pool, report points within the budget, the search methods named, ``audit.dataset``,
    shards (not with a person as the oracle)."""
    check_shards(audit, context)
    shards = get(audit, "shards")
    context.require(not (isinstance(shards, int) and shards > 1 and get(context.cfg, "oracle") == "cli"),
                    f"audit.shards={shards} with oracle=cli: a person answers one search in one job; use audit.shards=1")
    pool_size, budget = get(audit, "pool_size"), get(audit, "budget")
    # each tie needs its keys inside their own rules (budget >= 1, pool_size >= 1), reported by ranges
    ok_pool = isinstance(pool_size, int) and pool_size >= 1
    ok_budget = isinstance(budget, int) and budget >= 1
    if ok_pool and ok_budget:
        context.require(budget <= pool_size, f"audit.budget={budget} queries exceed audit.pool_size={pool_size} "
                        f"items; set audit.budget<={pool_size} or audit.pool_size>={budget}")
    if ok_budget:
        report_at = plain(get(audit, "report_at")) or []
        beyond = [k for k in report_at if k > budget]
        context.require(not beyond, f"audit.report_at {beyond} exceed audit.budget={budget}; report at k <= "
                        f"{budget} or raise audit.budget to {max(beyond) if beyond else budget}")
        context.require(all(k >= 1 for k in report_at), f"audit.report_at={report_at}: k counts queries, from 1")
    search = context.cfg.get("search")
    if search is not None:
        methods = target_block_keys(search)  # a method is a block with _target_ under search (advaudit.search.methods)
        name = get(search, "name")
        context.require(name in methods, f"search.name={name} is not a method in search; use one of {methods} "
                        f"(search=<name>), or add your own with +search/method=<name> (docs/extending.md)")
        unknown = [m for m in plain(get(audit, "compare")) or [] if m not in methods]
        context.require(not unknown, f"audit.compare names unknown methods {unknown}; use {methods}, or add "
                        f"your own with +search/method=<name> (docs/extending.md)")
        context.ranges(search, "search")
    check_audit_dataset(audit, context)


def check_audit_dataset(audit: DictConfig, context: Context) -> None:
    """``audit.dataset``: null (the target's own data) or a dataset block with ``_target_``, checked as a dataset."""
    dataset = get(audit, "dataset")
    if dataset is None:
        return
    if isinstance(dataset, str):
        context.checks.problems.append(
            f"audit.dataset={dataset} names no dataset config; to audit on conf/dataset/{dataset}.yaml write "
            f"+dataset@audit.dataset={dataset} (then audit.dataset.<key>=<value> changes its settings)")
        return
    if context.require(isinstance(dataset, DictConfig) and "_target_" in dataset,
                       f"audit.dataset={plain(dataset)!r} is not a dataset config; give a block with _target_ "
                       "(e.g. audit.dataset={_target_: advaudit.data.fashion_mnist.FashionMNISTDataModule}) or "
                       "+dataset@audit.dataset=<name of a conf/dataset option>"):
        context.check_part("dataset", dataset, "audit.dataset", DatasetConf)


def check_fault_tests(audit: DictConfig, context: Context) -> None:
    """The generator, transfer targets and judge are files; the injected features and pixel baselines."""
    generator = context.cfg.get("generator")
    if context.require(generator is not None, "audit=fault_tests needs generator=<path/to/generator.pt> "
                       "(written by train.py model=generator)"):
        context.file(generator, "generator", "a generator.pt written by train.py model=generator")
    for i, path in enumerate(plain(get(audit, "transfer_targets")) or []):
        context.file(path, f"audit.transfer_targets[{i}]", "a target.pt written by train.py")
    features = plain(get(audit, "fault_feature")) or []
    for i, feature in enumerate(features if isinstance(features, list) else [features]):
        key = "audit.fault_feature" + (f"[{i}]" if isinstance(features, list) else "")
        if context.require(isinstance(feature, Mapping) and "kind" in feature,
                           f"{key}={feature!r} must be {{kind: <feature>, direction: +1|-1}}"):
            context.require(feature.get("direction", 1) in (1, -1),
                            f"{key}.direction={feature.get('direction')!r}; use +1 or -1")
    judge = get(audit, "judge")
    if judge:
        context.file(judge, "audit.judge", "a classifier target.pt of another architecture")
    for kind, settings in (plain(get(audit, "pixel")) or {}).items():
        _check_pixel(kind, settings, context)


def _check_pixel(kind: str, settings: Any, context: Context) -> None:
    """One pixel baseline of ``audit.pixel``: a known norm, ``eps > 0``, ``steps >= 1``."""
    context.require(kind in ("l2", "linf"), f"audit.pixel.{kind}: unknown pixel baseline; use l2 or linf")
    if isinstance(settings, Mapping):
        eps, steps = settings.get("eps"), settings.get("steps")
        context.require(eps is None or (isinstance(eps, (int, float)) and eps > 0),
                        f"audit.pixel.{kind}.eps={eps} must be > 0")
        context.require(steps is None or (isinstance(steps, int) and steps >= 1),
                        f"audit.pixel.{kind}.steps={steps} must be >= 1")
