"""User-facing errors, and the one place that decides what is the user's error and what is a bug.

Every problem a user can cause (a wrong path, a checkpoint of another architecture, bounds with
low > high, a budget of 0, ...) is raised as :class:`AdvauditError` with a one-line message that
names the problem and the fix. The command-line shims (:mod:`advaudit.cli`) print that line,
exit with :data:`EXIT_USER_ERROR` and show no stack trace; :func:`classify` also recognises the
user errors that arrive as OmegaConf / Hydra exceptions (a value of the wrong type, a missing
``???`` value, a ``_target_`` that cannot be built with the arguments given). Messages are plain
text: terminal colour codes (which torch puts in some of its errors) never reach them.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from typing import Any, Iterable, Literal

import torch
from hydra.errors import HydraException, InstantiationException
from omegaconf import DictConfig
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

EXIT_OK, EXIT_BUG, EXIT_USER_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # the shell's convention for a run ended by SIGINT (128 + 2)

log = logging.getLogger("advaudit")

ErrorKind = Literal["user", "bug"]


class AdvauditError(ValueError):
    """A problem with the user's input or configuration, with its fix in the message."""


class RunInterrupted(KeyboardInterrupt):
    """The run was stopped by SIGINT or SIGTERM; what it wrote so far is kept for a resume."""

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def require(condition: bool, message: str) -> None:
    """Raise :class:`AdvauditError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise AdvauditError(message)


def warn(message: str) -> None:
    """A one-line warning for a setting that is legal but probably not what the user meant."""
    log.warning("warning: %s", strip_ansi(message))


#: ANSI escape sequences: CSI (colours, cursor: ``ESC [ ... m``), OSC (``ESC ] ... BEL``) and the two-byte ones
_ANSI = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (colours, bold, links), e.g. those in torch's errors."""
    return _ANSI.sub("", text)


def unknown_keys_message(path: str, unknown: Iterable[str], valid: Iterable[str]) -> str:
    """One line refusing the keys ``unknown`` of the node at ``path`` (``""``: the root), with the
    closest valid key for each (``difflib``), or the valid keys when none is close."""
    unknown, valid = [str(k) for k in unknown], sorted(str(k) for k in valid)
    prefix = f"{path}." if path else ""
    close = {key: difflib.get_close_matches(key, valid, n=1) for key in unknown}
    hints = [f"{prefix}{match[0]} for {prefix}{key}" for key, match in close.items() if match]
    hint = f"did you mean {', '.join(hints)}?" if hints else f"its keys are {valid}"
    return f"{path or 'the config'} has unknown keys {unknown} (nothing would read them); {hint}"


def check_finite(probs: torch.Tensor, context: str | dict[str, Any]) -> None:
    """Stop the run when a model under audit returned NaN or inf, naming where it happened.

    Args:
        probs: model outputs ``[B, K]`` (or ``[N, q, K]`` / ``[N, q]``); checked for NaN/inf.
        context: what produced them, e.g. ``"the target at step 3"`` or a mapping
            ``{"instance": ids [N], "condition": s [N, q, C], "factors": [names], "step": 3}``;
            with instance ids and conditions, the message names the first bad instance and its
            condition in factor units so the user can reproduce it.

    Raises:
        AdvauditError: if any value is not finite.
    """
    finite = torch.isfinite(probs)
    if bool(finite.all()):
        return
    rows = ~finite.reshape(finite.shape[0], -1).all(dim=1) if probs.dim() > 1 else ~finite
    count = int(rows.sum())
    where = _describe_context(context, rows)
    raise AdvauditError(f"the model under audit returned NaN/inf for {count} of {len(rows)} input(s) "
                        f"({where}); check the checkpoint (diverged training?) and that inputs are in "
                        "the range it was trained on")


def _describe_context(context: str | dict[str, Any], rows: torch.Tensor) -> str:
    """``"step 3, instance 17, condition {elevation: 12.5, ...}"`` for the first bad row."""
    if isinstance(context, str):
        return context
    first = int(rows.nonzero()[0])
    parts = [f"step {context['step']}"] if "step" in context else []
    instances = context.get("instance")
    if instances is not None:
        per_instance = max(1, len(rows) // max(1, len(instances)))
        parts.append(f"instance {int(instances[min(first // per_instance, len(instances) - 1)])}")
    condition = context.get("condition")
    if condition is not None:
        flat = condition.reshape(-1, condition.shape[-1])
        values = flat[min(first, len(flat) - 1)].tolist()
        names = context.get("factors") or [f"s{i}" for i in range(len(values))]
        parts.append("condition {" + ", ".join(f"{n}: {v:.4g}" for n, v in zip(names, values)) + "}")
    return ", ".join(parts) or "no context given"


# -- which exceptions are the user's ---------------------------------------------------------------
def classify(error: BaseException) -> tuple[ErrorKind, str]:
    """``("user", one-line message)`` for a user error, ``("bug", summary)`` for anything else.

    User errors: :class:`AdvauditError` anywhere in the exception's cause chain (so one raised
    inside ``hydra.utils.instantiate`` still counts), OmegaConf errors (wrong type, missing value,
    unknown key: the message names the key), Hydra's config errors (an override that does not
    parse or merge, a config option that does not exist), an ``instantiate`` call whose arguments
    do not fit the class, and files that do not exist or cannot be read. The message is plain text
    (no terminal colour codes), whatever the exception's own text held.
    """
    kind, message = _classify(error)
    return kind, strip_ansi(message)


def _classify(error: BaseException) -> tuple[ErrorKind, str]:
    """:func:`classify` before its message is cleaned."""
    chain = _chain(error)
    for item in chain:
        if isinstance(item, AdvauditError):
            return "user", one_line(item)
    if isinstance(error, InstantiationException):
        cause = chain[1] if len(chain) > 1 else None
        if cause is None or isinstance(cause, (TypeError, ImportError, OmegaConfBaseException)):
            return "user", one_line(error)
        return "bug", one_line(error)
    if isinstance(error, HydraException):
        cause = next((c for c in chain[1:] if isinstance(c, OmegaConfBaseException)), None)
        unknown = _unknown_key_override(cause)
        if unknown is not None:
            return "user", unknown
        return "user", one_line(error) + (f": {omegaconf_message(cause)}" if cause is not None else "")
    for item in chain:
        if isinstance(item, OmegaConfBaseException):
            return "user", omegaconf_message(item)
    for item in chain:
        if isinstance(item, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)):
            name = getattr(item, "filename", None)
            return "user", f"{item.strerror or type(item).__name__}: {name}; check the path in the config"
    return "bug", f"{type(error).__name__}: {one_line(error)}"


def _unknown_key_override(cause: BaseException | None) -> str | None:
    """An override of a key the config does not have (``audit.bugdet=8``), as the unknown-key line
    with the closest valid key; ``None`` for other errors, and for keys of open mappings with no
    close valid key (where Hydra's "To append to your config use +key=value" is the fix)."""
    if not isinstance(cause, (ConfigAttributeError, ConfigKeyError)):
        return None
    parent, key, full_key = getattr(cause, "parent_node", None), getattr(cause, "key", None), getattr(cause, "full_key", None)
    if not isinstance(parent, DictConfig) or key is None or not full_key or key in parent:
        return None
    valid = [str(k) for k in parent.keys() if k != "hydra"]
    typed = dataclasses.is_dataclass(getattr(cause, "object_type", None))
    if not typed and not difflib.get_close_matches(str(key), valid, n=1):
        return None
    path = str(full_key)[: -len(str(key))].rstrip(".")
    return unknown_keys_message(path, [str(key)], valid)


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    item: BaseException | None = error
    while item is not None and item not in seen:
        seen.append(item)
        item = item.__cause__ or item.__context__
    return seen


def one_line(error: BaseException | str) -> str:
    """The message of ``error`` folded onto one line (blank lines, indentation and terminal colour
    codes dropped)."""
    lines = [line.strip() for line in strip_ansi(str(error)).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    text = lines[0]
    for line in lines[1:]:
        text += (" " if text.endswith(":") else "; ") + line
    return text


def clipped(error: BaseException | str, limit: int = 240) -> str:
    """:func:`one_line` of ``error``, at most ``limit`` characters, cut between words (`` ...`` marks the cut)."""
    text = one_line(error)
    if len(text) <= limit:
        return text
    cut = text[:limit - 4]
    cut = cut[:cut.rfind(" ")] if " " in cut[limit // 2:] else cut
    return cut.rstrip(" ,;:") + " ..."


def omegaconf_message(error: BaseException) -> str:
    """An OmegaConf error as ``<message> (key: <full key>)`` on one line."""
    message = str(getattr(error, "msg", None) or error).strip().splitlines()
    first = message[0] if message else type(error).__name__
    key = getattr(error, "full_key", None)
    return f"{first} (key: {key})" if key and f"{key}" not in first else first
