"""One validation step before a task starts: every rule the config is held to, and files.

Types and choices are checked by Hydra at composition (the parts' settings dataclasses, stored by
:mod:`advaudit.registry`). Here, before any data is loaded or any model scored, :func:`validate`
checks the single-field rules (``ranged(...)`` next to each field; :mod:`advaudit.config.ranges`),
the rules of keys whose blocks another library defines (``KEY_RULES``), keys nothing reads
(:mod:`advaudit.config.known_keys`), the target, and then runs each part's own check
(:meth:`advaudit.config.part.Part.check`): the model and dataset of ``train``, the audit of
``examine``, which checks the parts it reads (world, examiner, search methods, generator). A block
of the user's own is held to its own settings dataclass where it has one, else to the keys it shares
with advaudit's parts.

Every problem found is reported together, in one message, each naming its key and the nearest valid
value; settings that are legal but probably not what the user meant get a one-line warning. Nothing
is changed: a request is honoured exactly or refused.
"""

from __future__ import annotations

from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf

from advaudit.config.ranges import key_rule_problems
from advaudit.config.roots import KEY_RULES, ExamineConf, TrainConf
from advaudit.config.validation import Checks, Context
from advaudit.data.settings import DatasetConf
from advaudit.errors import AdvauditError
from advaudit.models.targets.imported.spec import ADVAUDIT_FILE_KEYS, parse_target_spec
from advaudit.registry import schema_of, unknown_argument_problems, unknown_key_problems

__all__ = ["validate", "plain_config"]


def validate(cfg: DictConfig, task: str) -> list[str]:
    """Check ``cfg`` for ``task`` (``train`` or ``examine``); returns the warnings it logged.

    Raises:
        AdvauditError: listing every problem found, each with its key and a valid value.
    """
    checks = Checks()
    context = Context(cfg, checks, schema_of)
    checks.ranges(cfg, "", TrainConf if task == "train" else ExamineConf, deep=False)
    checks.problems += unknown_key_problems(cfg, task)
    if task == "train":
        checks.problems += key_rule_problems(cfg, KEY_RULES, checks.warnings)
        context.check_part("model", cfg.get("model"), "model")
        context.check_part("dataset", cfg.get("dataset"), "dataset", DatasetConf)
    elif task == "examine":
        _check_examine(context)
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


def _check_examine(context: Context) -> None:
    """The target, where the audit needs one (``needs_target``: all but the gallery), then the audit's check."""
    audit = context.cfg.get("audit")
    if audit is None:
        return
    if getattr(schema_of("audit", audit), "needs_target", True):
        target = context.cfg.get("target")
        if context.require(target is not None, "no target given; add target=<path/to/target.pt> (written by "
                           "train.py under <run dir>/checkpoints/)"):
            _check_target(context, target, context.cfg.get("seed", 0))
    context.check_part("audit", audit, "audit")


def _check_target(context: Context, target: Any, seed: Any) -> None:
    """A target path must be a file; a target block must be a valid :class:`TargetSpec` (its files present)."""
    if not isinstance(target, (DictConfig, Mapping)):
        context.file(target, "target", "a target.pt written by train.py or `advaudit import`")
        return
    block = OmegaConf.to_container(target, resolve=True) if isinstance(target, DictConfig) else dict(target)
    if block.get("path") is not None:
        context.file(block["path"], "target.path", "the model file")
    if set(block) <= set(ADVAUDIT_FILE_KEYS):
        return  # an advaudit target file named by a block: it describes itself
    try:
        parse_target_spec(block, int(seed) if isinstance(seed, int) else 0)
    except AdvauditError as error:
        context.checks.problems.append(str(error))
