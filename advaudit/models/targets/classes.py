"""Classes are matched by name: a target's outputs are paired with the data's classes by what they are called.

A model names its outputs (``target.class_names``, a class map's keys, a checkpoint's classes); the data
an audit feeds it (a world, a dataset, a generator) names its labels. Every audit pairs the two here,
once, and then works in the data's class order: :func:`align_target` reorders the target's output
columns so that column ``k`` is the data's class ``k`` (a class map's :data:`OTHER_CLASS` stays last).

Names are compared after one normalisation (:func:`normalise_class_name`): case is ignored, and runs
of spaces, hyphens and underscores are one separator, so ``T-shirt``, ``t_shirt`` and ``t shirt`` are
one class. A real rename is said in the target block, ``class_alignment: {model name: data name}``.
Pairing by position happens only where the block asks for it (``match_classes: position``), and the
pairing is recorded in ``target.meta["class_alignment"]`` for reports to state.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor, nn

from advaudit.errors import AdvauditError, require

#: the audit class that collects every model output outside a ``class_map`` (always the last column)
OTHER_CLASS = "(other)"
#: how a target block may ask its classes to be paired with the data's
MATCHES = ("name", "position")
log = logging.getLogger(__name__)
_SEPARATORS = re.compile(r"[\s_\-]+")


def normalise_class_name(name: Any) -> str:
    """``name`` as classes are compared: case folded, ends stripped, runs of spaces/``-``/``_`` as one ``-``."""
    return _SEPARATORS.sub("-", str(name).strip().casefold()).strip("-")


@dataclass(frozen=True)
class ClassAlignment:
    """How a target's outputs pair with the data's classes.

    Attributes:
        columns: ``[K']`` index into the target's outputs: data class ``k`` is output ``columns[k]``;
            a class map's other output is the last entry (``K' = K + 1``), else ``K' = K``.
        data_names: the data's class names, in the data's order (``+ OTHER_CLASS`` where the target has one).
        pairs: model name -> data name, for every data class.
        matched: ``"name"`` or ``"position"``.
    """

    columns: tuple[int, ...]
    data_names: tuple[str, ...]
    pairs: dict[str, str]
    matched: str

    def describe(self) -> str:
        """One line for reports: how the classes were paired (empty where names were equal and in order)."""
        renamed = [f"{m} as {d}" for m, d in self.pairs.items() if m != d]
        moved = self.columns != tuple(range(len(self.columns)))
        if self.matched == "position":
            return ("classes paired by position, as the target block asks (match_classes: position)"
                    + (f": {', '.join(renamed)}" if renamed else ""))
        if not renamed and not moved:
            return ""
        parts = ["classes paired by name"]
        if moved:
            parts.append("the target's outputs reordered to the data's class order")
        if renamed:
            parts.append(f"renamed: {', '.join(renamed)}")
        return "; ".join(parts)

    def record(self) -> dict[str, Any]:
        """Plain data for ``result.json`` and ``target.meta``."""
        return {"matched": self.matched, "pairs": dict(self.pairs), "columns": list(self.columns),
                "description": self.describe()}


def align_classes(model_names: Sequence[str], data_names: Sequence[str], renames: Mapping[str, str] | None = None,
                  match: str = "name", data_label: str = "the data", names_key: str = "target.class_names"
                  ) -> ClassAlignment:
    """Pair ``model_names`` (the target's outputs, in output order; may end in :data:`OTHER_CLASS`) with
    ``data_names`` (the data's labels, in label order).

    Args:
        renames: ``{model name: data name}`` for classes called differently (``target.class_alignment``).
        match: ``"name"`` (default) or ``"position"`` (only where the user asked for it).
        data_label: how errors name the data (``"the world"``, ``"audit.dataset"``).
        names_key: the key of the target block the model's names come from (``target.class_map`` for a map's keys).

    Raises:
        AdvauditError: one line naming the class that has no partner, the closest names and the fix.
    """
    require(match in MATCHES, f"target.match_classes={match!r}; use one of {', '.join(MATCHES)}")
    model = [str(c) for c in model_names]
    other = [i for i, c in enumerate(model) if c == OTHER_CLASS]
    named = [(i, c) for i, c in enumerate(model) if c != OTHER_CLASS]
    data = [str(c) for c in data_names]
    _require_unique(data, data_label)
    _require_unique([c for _, c in named], "the target")
    if match == "position":
        require(len(named) == len(data), f"the target has {len(named)} classes {[c for _, c in named]} but "
                f"{data_label} has {len(data)} {data}; pairing by position (target.match_classes=position) "
                "needs as many on both sides")
        pairs = {c: data[k] for k, (_, c) in enumerate(named)}
        columns = [i for i, _ in named]
    else:
        partner = _partners(named, data, dict(renames or {}), data_label, names_key)
        missing = [d for d in data if d not in partner.values()]
        if missing:
            raise AdvauditError(
                f"the target predicts no class {missing[0]!r} of {data_label} (its classes are "
                f"{[c for _, c in named]}); keep only the target's classes in the data (e.g. world.classes=[...] or "
                "audit.dataset.classes=[...]) or map model outputs to it with target.class_map")
        by_data = {d: (i, m) for (i, m), d in zip(named, (partner[m] for _, m in named))}
        pairs = {by_data[d][1]: d for d in data}
        columns = [by_data[d][0] for d in data]
    return ClassAlignment(tuple(columns + other), tuple(data + [OTHER_CLASS] * len(other)), pairs, match)


def _partners(named: list[tuple[int, str]], data: list[str], renames: dict[str, str], data_label: str,
              names_key: str = "target.class_names") -> dict[str, str]:
    """Model name -> data name by the renames, else by normalised name; refuses a name with no partner."""
    model = [c for _, c in named]
    for key, value in renames.items():
        _require_known(str(key), model, "target.class_alignment names model class", "the target's classes")
        _require_known(str(value), data, f"target.class_alignment[{key}] names class", data_label)
    normalised = {normalise_class_name(d): d for d in data}
    partner: dict[str, str] = {}
    for name in model:
        found = renames.get(name) or normalised.get(normalise_class_name(name))
        if found is None:
            close = difflib.get_close_matches(name, data, n=2, cutoff=0.5)
            hint = f" (closest: {', '.join(repr(c) for c in close)})" if close else f" (its classes: {data})"
            raise AdvauditError(
                f"the target's class {name!r} is not a class of {data_label}{hint}; fix "
                f"{'the key ' + repr(name) + ' of ' if names_key == 'target.class_map' else ''}{names_key}, or "
                f"say the rename with target.class_alignment={{{name}: {close[0] if close else '<data class>'}}}, "
                "or pair by position with target.match_classes=position")
        taken = [m for m, d in partner.items() if d == found]
        if taken:
            raise AdvauditError(f"the target's classes {taken[0]!r} and {name!r} both name {data_label}'s class "
                                f"{found!r}; give each output its own class (target.class_names or "
                                "target.class_alignment)")
        partner[name] = str(found)
    return partner


def _require_known(name: str, names: list[str], what: str, where: str) -> None:
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
        raise AdvauditError(f"{what} {name!r}, which is not one of {where}"
                            + (f"; did you mean {close[0]!r}?" if close else f" ({names})"))


def _require_unique(names: list[str], label: str) -> None:
    seen: dict[str, str] = {}
    for name in names:
        key = normalise_class_name(name)
        require(key not in seen, f"{label} has classes {seen.get(key)!r} and {name!r}, which are one name "
                "once case, spaces, hyphens and underscores are ignored; rename one")
        seen[key] = name


class OrderedOutputs(nn.Module):
    """``net``'s outputs ``[B, M]`` with columns picked and ordered by ``columns``: ``[B, K']``."""

    def __init__(self, net: nn.Module, columns: Sequence[int]) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("columns", torch.tensor(list(columns), dtype=torch.long))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).index_select(1, self.columns)


def class_pairing(renames: Mapping[str, str] | None, match: str = "name") -> dict[str, Any]:
    """What a target block says about pairing its classes, as ``target.meta`` keeps it (plain data)."""
    out: dict[str, Any] = {"match_classes": str(match)}
    if renames:
        out["class_renames"] = {str(k): str(v) for k, v in dict(renames).items()}
    return out


def align_target(target: Any, data_names: Sequence[str], data_label: str = "the data") -> Any:
    """``target`` with its outputs in ``data_names``' order and those names as its classes (in place; returned).

    The target block's ``class_alignment`` and ``match_classes`` (kept in ``target.meta`` as
    ``class_renames`` and ``match_classes``) say how; a target aligned before is paired by name again
    (its classes are the data's names by then), and keeps its record where nothing changes.
    A torch target's ``net`` is wrapped (:class:`OrderedOutputs`), so logits, gradients and attacks
    see the data's order; a black box (``output_columns``) reorders its scores. The pairing is kept in
    ``target.meta["class_alignment"]`` (see :meth:`ClassAlignment.record`).

    Raises:
        AdvauditError: where a class has no partner (see :func:`align_classes`).
    """
    meta = target.meta
    done = meta.get("class_alignment")  # aligned before: its classes are data names now, renames spent
    mapped = isinstance(meta.get("source"), Mapping) and meta["source"].get("class_map") is not None
    alignment = align_classes(meta["class_names"], data_names, None if done else meta.get("class_renames"),
                              "name" if done else str(meta.get("match_classes") or "name"), data_label,
                              "target.class_map" if mapped else "target.class_names")
    columns = alignment.columns
    unmoved = columns == tuple(range(len(columns)))
    if done and unmoved and list(alignment.data_names) == list(meta["class_names"]):
        return target
    if unmoved:
        pass  # names only: no output moves
    elif isinstance(target, nn.Module) and isinstance(getattr(target, "net", None), nn.Module):
        device = next(iter(target.buffers()), torch.empty(0)).device
        target.net = OrderedOutputs(target.net, columns).to(device)
    else:
        previous = getattr(target, "output_columns", None)
        target.output_columns = torch.tensor(columns) if previous is None else previous[torch.tensor(columns)]
    if list(alignment.data_names) != list(meta["class_names"]):
        meta["model_class_names"] = meta.get("model_class_names") or list(meta["class_names"])
    meta["class_names"] = list(alignment.data_names)
    meta["class_alignment"] = alignment.record()
    if alignment.describe():  # said on the terminal too, not only in result.json
        log.info("%s: %s", data_label, alignment.describe())
    return target


def pick_columns(scores: Tensor, target: Any) -> Tensor:
    """A black box's scores ``[B, M]`` in its aligned class order ``[B, K']`` (unchanged where not aligned)."""
    columns = getattr(target, "output_columns", None)
    return scores if columns is None else scores.index_select(1, columns.to(scores.device))
