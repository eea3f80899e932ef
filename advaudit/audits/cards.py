"""The cards of advaudit's audits (:class:`advaudit.config.audit_card.AuditCard`), for the layers above.

:func:`audit_card` imports, once, every module of this package that declares a part's settings (found by
reading the sources, as :mod:`advaudit.registry` finds them), so each audit's settings class files its card;
a new audit's module is found the same way, with nothing to add here.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from typing import Optional

from advaudit.config.audit_card import AuditCard, card_of
from advaudit.config.part import declaring_modules

__all__ = ["audit_card", "load_cards"]


@cache
def load_cards() -> None:
    """Import the modules of advaudit's audits that declare settings (their cards are filed as they load)."""
    for module in declaring_modules(Path(__file__).parent):
        importlib.import_module(module)


def audit_card(name: object) -> Optional[AuditCard]:
    """The card of the audit ``name`` (``audit.name`` of a run), or None for an audit advaudit does not hold."""
    load_cards()
    return card_of(name)
