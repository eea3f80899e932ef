"""The machinery of checked configs: range rules, known keys, the root configs, typed settings.

The parts' own settings live beside the parts (``advaudit/<package>/settings.py``: each a dataclass
mixing in :class:`advaudit.config.part.Part`); :mod:`advaudit.registry` finds them, stores them in
Hydra's ConfigStore and runs their checks. :func:`typed` gives a part its settings as its
dataclass's object.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from advaudit.errors import AdvauditError, unknown_keys_message

__all__ = ["typed"]

T = TypeVar("T")


def typed(schema: type[T], node: Any) -> T:
    """``node`` (a config mapping, a plain dict or None) as a ``schema`` object (``OmegaConf.to_object``).

    Keys ``node`` leaves out take the schema's defaults; the object's own checks run
    (:class:`advaudit.config.ranges.Ranged`).

    Raises:
        AdvauditError: one line for a key the schema does not have (with the closest one it has) or a
            value of the wrong type.
    """
    if isinstance(node, schema):
        return node
    where = getattr(schema, "config_path", schema.__name__)
    values = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node or {})
    fields = [f.name for f in dataclasses.fields(schema)]  # type: ignore[arg-type]
    unknown = [str(key) for key in values if key not in fields]
    if unknown:
        raise AdvauditError(unknown_keys_message(where, unknown, [f for f in fields if not f.startswith("_")]))
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), values))  # type: ignore[return-value]
    except OmegaConfBaseException as error:
        raise AdvauditError(f"{where}: {str(error).splitlines()[0]}") from None
