"""Read an offline W&B run back (``<dir>/wandb/offline-run-*/run-*.wandb``): what ``wandb sync`` will upload.

The file is W&B's record log (a LevelDB-style log of 32 KiB blocks, each record a
``wandb_internal_pb2.Record``). :func:`offline_run` returns the parts a team relies on: group,
job type, tags, config, summary and artifacts (with their ``use_after_commit`` flag: an input).
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Any, Iterator

from advaudit.errors import require

BLOCK = 32768
HEADER = 7          # crc32 (4), length (2), type (1)
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def raw_records(path: str | Path) -> Iterator[bytes]:
    """The serialized records of a ``.wandb`` file, in order."""
    data = Path(path).read_bytes()
    require(data[:4] == b":W&B", f"{path} is not a W&B run file (no ':W&B' header)")
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        if kind == 0 and length == 0:  # block padding
            pos += left
            continue
        chunk, pos = data[pos + HEADER:pos + HEADER + length], pos + HEADER + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            yield pending + chunk
            pending = b""


def offline_run(run_dir: str | Path, wait_s: float = 30.0) -> dict[str, Any]:
    """``{"group", "job_type", "tags", "name", "config", "summary", "artifacts", "finished"}`` of an offline run.

    W&B's service writes the file after ``run.finish()`` returns; this waits up to ``wait_s``
    seconds for the run's exit record (``finished``) before reading what is there.
    """
    files = sorted(Path(run_dir).glob("run-*.wandb"))
    require(files, f"{run_dir} holds no run-*.wandb file")
    deadline = time.monotonic() + wait_s
    while True:
        out = _parse(files[0])
        if out["finished"] or time.monotonic() > deadline:
            return out
        time.sleep(0.2)


def _parse(path: Path) -> dict[str, Any]:
    from wandb.proto import wandb_internal_pb2 as pb  # W&B is slow to import; only a run that logs needs it

    out: dict[str, Any] = {"config": {}, "summary": {}, "artifacts": [], "finished": False}
    for data in raw_records(path):
        record = pb.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            out.update(group=run.run_group, job_type=run.job_type, tags=list(run.tags), name=run.display_name)
            out["config"].update({i.key: json.loads(i.value_json) for i in run.config.update})
        elif kind == "config":
            out["config"].update({i.key: json.loads(i.value_json) for i in record.config.update})
        elif kind == "summary":
            out["summary"].update({i.key: json.loads(i.value_json) for i in record.summary.update if i.key})
        elif kind == "artifact":
            a = record.artifact
            out["artifacts"].append({"name": a.name, "type": a.type, "input": bool(a.use_after_commit),
                                     "metadata": json.loads(a.metadata or "{}"), "aliases": list(a.aliases),
                                     "files": [e.path for e in a.manifest.contents]})
        elif kind == "exit":
            out["finished"] = True
    return out


def offline_runs(root: str | Path) -> list[dict[str, Any]]:
    """Every offline run under ``root`` (recursively), each with its folder as ``dir``."""
    return [{"dir": str(d), **offline_run(d)} for d in sorted(Path(root).rglob("offline-run-*")) if d.is_dir()]
