"""How an error-search method plugs in: one class plus one YAML that names it with ``_target_``.

Every method, advaudit's and a user's alike, is a block ``search.<name>`` of the composed config:
``_target_`` (its class), ``_partial_: true`` and its settings, which are the class's keyword
arguments. Each block comes from one YAML of the ``search/method`` config group
(``conf/search/method/<name>.yaml``, whose ``# @package search.<name>`` header puts it there);
:mod:`advaudit.registry` composes every built-in one (``search/methods``), so ``audit.compare`` can name any of
them, and ``+search/method=<name>`` adds one from the user's ``--config-dir``. ``search.name`` is the
method the audit reports first (``search=<name>`` sets it for the built-in ones); every name in
``audit.compare`` runs beside it on the same pools. Nothing in advaudit lists the methods: the
audit runs whatever block a name points to. This keeps the commands and keys users already write
(``search=gad``, ``search.bansal_weld.variance=1.0``, ``audit.compare=[random,gad]``) while making a
new method a class and a YAML file, as for examiners and worlds.

A method is one of two kinds, told apart by what the class does, never by its name:

* a :class:`Scorer` gives every eligible item a score once; the audit queries each pool in
  ascending order of it (:class:`advaudit.search.baselines.ScoreOrder`);
* any other class is a :class:`advaudit.search.policy.QueryPolicy`, started on a batch of pools and
  asked for one item per pool at a time (adaptive policies, random and low-confidence orders).

``_partial_: true`` because the audit makes a fresh object from the block each time it needs one
(one policy per chunk of pools: policies keep per-pool state). A setting the class does not take is
refused with one line naming the ones it does, when the config is validated
(:mod:`advaudit.config.known_keys`) and again here, when the method is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

from hydra.utils import instantiate
from omegaconf import OmegaConf
from torch import Tensor

from advaudit.confutil import plain, refuse_unknown_arguments, target_block_keys
from advaudit.errors import require
from advaudit.search.policy import QueryPolicy
from advaudit.search.scorers import ScoreInputs

__all__ = ["Scorer", "MethodFactory", "method_names", "build_method", "is_scorer"]

#: keys of ``search`` that are not methods: the name of the method reported first
LABEL_KEYS = ("name",)


@runtime_checkable
class Scorer(Protocol):
    """A static error-search method: one score per eligible item, pools queried lowest first."""

    def item_values(self, inputs: ScoreInputs, cache: Path) -> tuple[Tensor, dict[str, Any]]:
        """``[n]`` one value per eligible item of ``inputs`` (NaN: could not be scored), computed once
        for all pools, and facts about the run (logged as ``search/<name>/<fact>``).

        ``cache``: a path stem (``<out>/scores/<name>``) under which the scorer may keep files
        (``<cache>.jsonl``) to resume an interrupted run.
        """
        ...

    def pool_scores(self, values: Tensor, confidence: Tensor, pools: Tensor) -> Tensor:
        """``[R, P]`` the score of every pool item (lower = query first) from ``values`` ``[n]``,
        the items' calibrated confidence ``[n]`` and the pools' item indices ``pools`` ``[R, P]``."""
        ...


#: what a block builds: called with no arguments, a fresh :class:`Scorer` or :class:`QueryPolicy`
MethodFactory = Callable[[], "Scorer | QueryPolicy"]


def method_names(search: Any) -> list[str]:
    """The names of the methods in ``search`` (its keys holding a ``_target_`` block), in order."""
    return [key for key in target_block_keys(search) if key not in LABEL_KEYS]


def build_method(search: Any, name: str) -> MethodFactory:
    """The factory the block ``search.<name>`` describes (its class with its settings bound).

    Raises:
        AdvauditError: one line when ``name`` is not a method of ``search``, when the class cannot be
            imported, or naming a setting the class does not take, with the ones it does.
    """
    blocks = plain(search, {}) or {}
    require(name in method_names(search), f"search has no method {name!r} (a block with _target_); the methods "
            f"are {method_names(search)}; add one of your own with +search/method={name} (docs/extending.md)")
    options = dict(blocks[name])
    refuse_unknown_arguments(f"search.{name}", "method", options, (), "the audit")
    options["_partial_"] = True
    return instantiate(OmegaConf.create(options))


def is_scorer(method: object, name: str) -> bool:
    """Whether the object ``search.<name>`` built is a :class:`Scorer` (else it is a policy).

    Raises:
        AdvauditError: one line when it is neither (no ``item_values`` / ``pool_scores``, nor
            ``start`` / ``next`` / ``observe``).
    """
    if isinstance(method, Scorer):
        return True
    require(all(callable(getattr(method, step, None)) for step in ("start", "next", "observe")),
            f"search.{name} builds a {type(method).__name__}, which is neither a scorer (item_values, pool_scores) "
            "nor a policy (start, next, observe): advaudit.search.methods")
    return False

