"""One audit over K jobs: what each shard writes about itself, and the checks before its shards are merged.

With ``audit.shards=K audit.shard=k`` a job does only its part of the audit's costly work (the
worst-case audit: every K-th instance's examination; error search: every K-th chunk of the scoring)
and writes ``shard.json`` into its run dir: when it starts (``finished: false``, the examination's key,
the command that finishes it) and again when its part is done (``finished: true`` and what the merge
needs). The merge (:mod:`advaudit.audits.merging`) groups shards by key, refuses a set with a missing,
repeated or unfinished shard in one line that names the shard and the command to finish it, and
writes the report of the whole audit once.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf
from torch import Tensor

from advaudit.core.records import read_json, write_json
from advaudit.errors import require

SHARD_FILE = "shard.json"


def shard_rows(n: int, shard: int, shards: int, what: str = "instances") -> Tensor:
    """``[n_shard]`` rows of shard ``shard`` of ``shards`` among ``n`` units of work (instances, chunks): every
    ``shards``-th row from ``shard`` (so a stratified selection's classes spread over the shards)."""
    require(shards <= n, f"audit.shards={shards} but there are only {n} {what} to split; use audit.shards <= {n}")
    return torch.arange(shard, n, shards)


def resume_command(out: Path) -> str | None:
    """The command that runs this Hydra job again into its run dir ``out`` (so it resumes), or None outside a
    Hydra job (a config composed in Python)."""
    if not HydraConfig.initialized():
        return None
    hydra = HydraConfig.get()
    words = ["python", f"{hydra.job.name}.py"]
    for source in hydra.runtime.config_sources:
        if source.provider == "command-line" and str(source.path).startswith("file://"):
            words += ["--config-dir", str(source.path)[len("file://"):]]
    return shlex.join([*words, *hydra.overrides.task, f"hydra.run.dir={out}"])


def start_shard(out: Path, audit: str, shard: int, shards: int, key: str, **facts: Any) -> None:
    """Say in ``<out>/shard.json`` that shard ``shard`` of ``shards`` of the audit ``key`` started here (not
    finished), with the command that finishes it."""
    write_json(Path(out) / SHARD_FILE, {"audit": audit, "shard": shard, "shards": shards, "key": key,
                                        "finished": False, "command": resume_command(Path(out)), **facts})


def finish_shard(out: Path, **facts: Any) -> dict[str, Any]:
    """Mark the shard in ``out`` finished, adding ``facts`` (what the merge reads); returns the shard's record."""
    record = {**read_json(Path(out) / SHARD_FILE), **facts, "finished": True}
    write_json(Path(out) / SHARD_FILE, record)
    return record


def _finish_hint(shard: dict[str, Any], where: Path) -> str:
    command = shard.get("command")
    return (f"finish it with: {command}" if command else
            f"finish it by running its job again into {where} (it resumes)")


def read_shards(shard_dirs: list[Path]) -> tuple[list[Path], list[dict[str, Any]], list[dict[str, Any]]]:
    """The run dirs, ``shard.json`` and ``result.json`` of every shard of one audit, in shard order, after
    checking they are all the shards of one audit and all finished (else one line naming the shard that is
    not and the command that finishes it)."""
    dirs, shards, results = [], [], []
    for d in map(Path, shard_dirs):
        require((d / SHARD_FILE).exists(), f"{d} holds no {SHARD_FILE}: pass the run dirs of an audit run with "
                "audit.shards=K (one per audit.shard)")
        shard = read_json(d / SHARD_FILE)
        result = read_json(d / "result.json") if (d / "result.json").exists() else {}
        require(shard.get("finished") and result.get("status") == "ok",
                f"shard {shard['shard']} of {shard['shards']} in {d} did not finish"
                + (f" ({result['error']})" if result.get("error") else "") + f"; {_finish_hint(shard, d)}, then merge")
        dirs.append(d)
        shards.append(shard)
        results.append(result)
    order = sorted(range(len(shards)), key=lambda k: shards[k]["shard"])
    dirs, shards, results = [dirs[k] for k in order], [shards[k] for k in order], [results[k] for k in order]
    count = shards[0]["shards"]
    require(len({sh["key"] for sh in shards}) == 1, "the run dirs hold shards of different audits (config or seed "
            "differ); merge the shards of one audit")
    numbers = [sh["shard"] for sh in shards]
    missing = sorted(set(range(count)) - set(numbers))
    require(numbers == list(range(count)), f"got shards {numbers} of {count}; pass every shard 0..{count - 1} once"
            + (f" (shard {missing[0]} is missing: run it with {missing_command(shards[0], missing[0], dirs[0].parent)})"
               if missing else ""))
    return dirs, shards, results


def missing_command(known: dict[str, Any], missing: int, sweep_dir: Path) -> str:
    """The command that runs shard ``missing`` of the audit whose shard ``known`` (its ``shard.json``) ran: that
    shard's command with ``audit.shard=<missing>``, into the job dir Hydra made for it in ``sweep_dir`` if any."""
    command = known.get("command")
    if not command:
        return f"the job of shard {known['shard']} with audit.shard={missing}"
    words = [f"audit.shard={missing}" if w.startswith("audit.shard=") else w for w in shlex.split(command)]
    settings = {w for w in words if "=" in w and not w.startswith(("audit.shard=", "hydra.run.dir="))}
    for overrides in sorted(Path(sweep_dir).glob("*/.hydra/overrides.yaml")):
        given = set(OmegaConf.load(overrides))
        if f"audit.shard={missing}" in given and given - {f"audit.shard={missing}"} <= settings:
            words = [f"hydra.run.dir={overrides.parent.parent}" if w.startswith("hydra.run.dir=") else w
                     for w in words]
            break
    else:
        words = [f"hydra.run.dir={Path(sweep_dir) / f'shard_{missing}'}" if w.startswith("hydra.run.dir=") else w
                 for w in words]
    return shlex.join(words)


def sweep_shards(sweep_dir: Path) -> dict[str, list[Path]]:
    """The run dirs of the sharded audits of a multirun (their ``shard.json``), grouped by audit key."""
    groups: dict[str, list[Path]] = {}
    for path in sorted(Path(sweep_dir).rglob(SHARD_FILE)):
        if path.parent.name != "merged" and "merged" not in path.relative_to(sweep_dir).parts:
            groups.setdefault(str(read_json(path)["key"]), []).append(path.parent)
    return groups
