"""One lifecycle for every audit's run dir: claim it by one fingerprint, keep finished units, resume.

An audit opens its run dir with :class:`RunDir`: the dir is claimed for the examination's
fingerprint (a hash of the resolved config keys that change results, see :func:`fingerprint`), a
dir that holds another examination is refused in one line, and the audit saves each finished
unit of work (a method of an error search, a chunk of fault tests) with :meth:`RunDir.save`; a
rerun into the same dir loads the finished units (:meth:`RunDir.load`) instead of computing them
again, so an interrupted run resumes to the numbers of an uninterrupted one. The worst-case audit
appends its steps to ``steps.jsonl`` and checkpoints its examiner in the same claimed dir.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import torch
from omegaconf import DictConfig, OmegaConf

from advaudit.core.run_records import AUDIT_BOOKKEEPING, audit_design, claim_dir, fingerprint_of

FINGERPRINT_FILE = "audit_fingerprint.json"
UNITS = "units"
# a claimed dir holds one shard: a shard must not resume another's records (the merge keys the whole examination)
_CLAIM_KEEPS = frozenset({"shard", "shards"})


#: settings added after examinations were made, at the value that computes what they computed before the key
#: existed: left out of the design at that value, so such an examination still resumes and extends
NEUTRAL_ADDITIONS: dict[tuple[str, str], Any] = {("examiner", "fit"): "joint"}


def fingerprint(cfg: DictConfig, sections: Iterable[str], ignore: Iterable[str] = (),
                keep: Iterable[str] = _CLAIM_KEEPS) -> str:
    """16 hex digits identifying what ``cfg`` examines: ``target``, ``seed`` and the ``sections`` the audit
    reads (``audit`` always), resolved, without the audit's bookkeeping keys (:data:`AUDIT_BOOKKEEPING`
    less ``keep``, ``audit.validity``'s :data:`VALIDITY_BOOKKEEPING`) and the audit keys in ``ignore``."""
    return fingerprint_of(examination(cfg, sections, ignore, keep))


def examination(cfg: DictConfig, sections: Iterable[str], ignore: Iterable[str] = (),
                keep: Iterable[str] = _CLAIM_KEEPS) -> dict[str, Any]:
    """What :func:`fingerprint` hashes: ``target``, ``seed``, ``audit`` and ``sections`` of ``cfg``, resolved,
    without the bookkeeping keys."""
    config = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    design = {key: config.get(key) for key in ("target", "seed", "audit", *sections)}
    dropped = (AUDIT_BOOKKEEPING - frozenset(keep)) | frozenset(ignore)
    design["audit"] = audit_design(design["audit"] or {}, dropped)
    for (section, key), neutral in NEUTRAL_ADDITIONS.items():   # examinations made before the key existed resume
        if isinstance(design.get(section), dict) and design[section].get(key) == neutral:
            del design[section][key]
    return json.loads(json.dumps(design, default=str))


class RunDir:
    """An audit's claimed run dir ``out``: its fingerprint and its finished units (``units/<kind>/<name>.pt``)."""

    def __init__(self, out: Path, cfg: DictConfig, sections: Iterable[str], ignore: Iterable[str] = ()) -> None:
        self.out = Path(out)
        # the one claim scheme (training's too): the fingerprint and the design in <out>/audit_fingerprint.json
        self.key = claim_dir(self.out, examination(cfg, sections, ignore), FINGERPRINT_FILE, "a different examination")

    def unit_path(self, kind: str, name: str) -> Path:
        return self.out / UNITS / kind / f"{name}.pt"

    def load(self, kind: str, name: str) -> dict[str, Any] | None:
        """The finished unit ``kind/name`` as saved (tensors on the CPU), or None when it is not on disk."""
        path = self.unit_path(kind, name)
        return torch.load(path, weights_only=True, map_location="cpu") if path.exists() else None

    def save(self, kind: str, name: str, payload: dict[str, Any]) -> None:
        """Save a finished unit atomically (a run killed while writing leaves no half unit)."""
        path = self.unit_path(kind, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        torch.save(payload, tmp)
        tmp.replace(path)
