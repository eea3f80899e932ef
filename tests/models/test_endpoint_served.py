"""The served model (what both runtimes run on the server): it reuses the memory a request frees.

glibc hands large freed blocks back to the system by default, and each next request of 500 images
page-faults its activations in again (thousands of faults, half its inference time). The served model
keeps them; checked in a fresh process, as a server runs it, by the page faults of its later requests.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
import json, resource, sys
import numpy as np, torch
from advaudit.models.targets.endpoint.served import ServedClassifier
net = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                          torch.nn.Linear(16 * 28 * 28, 10)).eval()
torch.jit.save(torch.jit.trace(net, torch.rand(2, 1, 28, 28)), sys.argv[1])
model = ServedClassifier("m", sys.argv[1], {"input_shape": [1, 28, 28], "memory": sys.argv[2]})
x = np.random.default_rng(0).random((500, 1, 28, 28), dtype=np.float32)
faults = []
for _ in range(8):
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    model(x)
    faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
print(json.dumps({"kept": model.kept_memory, "faults": faults}))
"""


@pytest.mark.skipif(platform.system() != "Linux", reason="page faults per thread and glibc's mallopt: Linux")
def test_the_served_model_reuses_freed_memory_instead_of_faulting_it_in_again(tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path / "m.pt"), "keep"], capture_output=True,
                         text=True, timeout=120, cwd=root,
                         env={"PYTHONPATH": root, "OMP_NUM_THREADS": "1", "PATH": "/usr/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # each request's activations: 500 x 16 x 28 x 28 float32 = 25 MB twice, 12,000 pages if faulted in afresh
    assert result["kept"] is True and max(result["faults"][4:]) < 100, result
