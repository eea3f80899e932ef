"""``memory: keep`` (advaudit.runtime.configure_memory): freed blocks are reused instead of faulted in afresh.

Each case runs in its own interpreter, since a process's ``malloc`` settings cannot be undone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advaudit.runtime import configure_memory

_ROUNDS = """
import json, resource, sys
import torch
from advaudit.runtime import configure_memory
took = configure_memory(sys.argv[1])
faults = []
for _ in range(12):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = torch.ones(16 * 2**20)  # 64 MB, above glibc's largest mmap threshold (32 MB): mmapped by default
    del block
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"took": took, "faults": faults}))
"""


def _faults(memory: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _ROUNDS, memory], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_reuses_freed_blocks_where_release_faults_them_in_again():
    keep, release = _faults("keep"), _faults("release")
    assert keep["took"] is True and release["took"] is False
    pages = 16 * 2**20 * 4 // 4096                                           # 16,384 pages of 4 KiB per block
    assert min(release["faults"][2:]) > pages // 2                           # every round faults the block in
    assert sum(keep["faults"][2:]) < pages // 2                              # after warm-up: the same pages
    assert sum(keep["faults"][2:]) < sum(release["faults"][2:]) / 20


def test_an_unknown_choice_is_refused_by_name():
    with pytest.raises(ValueError, match="memory='spare'.*keep, release"):
        configure_memory("spare")
