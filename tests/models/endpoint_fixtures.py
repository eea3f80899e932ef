"""Real Open Inference Protocol servers for the tests: MLServer and KServe serving a small torch model and its
ONNX export.

:func:`start_test_server` writes the model (:class:`tests.models.user_models.SmallNet`, seed 0) as a
TorchScript file and as ONNX, and serves them, with the deployments the tests need, on a free port of
127.0.0.1 (:class:`advaudit.models.targets.endpoint.serve.LocalServer`, 10 s to start on the 2-core machine):

- ``fmnist`` (TorchScript) and ``fmnist-onnx``: the model as it is;
- ``fmnist-secure``: answers only requests carrying ``Bearer $ADVAUDIT_TEST_ENDPOINT_TOKEN``;
- ``fmnist-quiet``: its metadata names no input (the server alone knows the input's name);
- ``fmnist-broken``: every request fails on the server (HTTP 500).

:func:`start_kserve_server` serves ``fmnist``, ``fmnist-onnx`` and ``fmnist-secure`` with KServe's ``ModelServer``,
which also reads binary tensors (MLServer does not).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import torch

from advaudit.models.targets.endpoint.serve import LocalServer, ServedModel
from tests.models.user_models import SmallNet

TOKEN_ENV = "ADVAUDIT_TEST_ENDPOINT_TOKEN"
#: a secret no file of advaudit's may ever hold (the tests grep for it)
TOKEN = f"tok-{secrets.token_hex(16)}"
FMNIST_SHAPE = [1, 28, 28]


def write_models(root: Path) -> tuple[torch.nn.Module, Path, Path]:
    """``(net, TorchScript path, ONNX path)`` of the served model, written under ``root``."""
    torch.manual_seed(0)
    net = SmallNet().eval()
    script, onnx = root / "net.pt", root / "net.onnx"
    torch.jit.save(torch.jit.script(net), str(script))
    torch.onnx.export(net, (torch.rand(2, *FMNIST_SHAPE),), str(onnx), dynamo=False, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    return net, script, onnx


def served_models(script: Path, onnx: Path) -> list[ServedModel]:
    """The repository of the module docstring."""
    return [ServedModel("fmnist", script, FMNIST_SHAPE),
            ServedModel("fmnist-onnx", onnx, FMNIST_SHAPE, version="7"),
            ServedModel("fmnist-secure", script, FMNIST_SHAPE, extra={"token_env": TOKEN_ENV}),
            ServedModel("fmnist-quiet", script, FMNIST_SHAPE, input_name="pixels", declare_input=False),
            ServedModel("fmnist-broken", script, FMNIST_SHAPE, extra={"fail": "error"})]


def start_test_server(root: Path, port: int | None = None) -> LocalServer:
    """The server of the module docstring, started; ``server.net``, ``.script`` and ``.onnx`` name its model."""
    os.environ[TOKEN_ENV] = TOKEN
    net, script, onnx = write_models(root)
    server = LocalServer(served_models(script, onnx), root / "repository", port=port).start()
    server.net, server.script, server.onnx = net, script, onnx  # type: ignore[attr-defined]
    return server


def start_kserve_server(root: Path) -> LocalServer:
    """KServe serving ``fmnist`` (TorchScript), ``fmnist-onnx`` (version 7) and ``fmnist-secure``, as
    :func:`start_test_server`."""
    os.environ[TOKEN_ENV] = TOKEN
    net, script, onnx = write_models(root)
    models = [ServedModel("fmnist", script, FMNIST_SHAPE), ServedModel("fmnist-onnx", onnx, FMNIST_SHAPE, version="7"),
              ServedModel("fmnist-secure", script, FMNIST_SHAPE, extra={"token_env": TOKEN_ENV})]
    server = LocalServer(models, root / "repository", server="kserve").start()
    server.net, server.script, server.onnx = net, script, onnx  # type: ignore[attr-defined]
    return server


def endpoint_block(server: LocalServer, model: str = "fmnist", *, endpoint: dict[str, Any] | None = None,
                   **keys: Any) -> dict[str, Any]:
    """A target block auditing ``model`` on ``server`` (Fashion-MNIST's classes; quick retries for tests)."""
    from tests.models.test_imported_targets import FMNIST_NAMES

    settings = {"url": server.url, "model": model, "retries": 1, "backoff": 0.05, "timeout": 20, **(endpoint or {})}
    return {"endpoint": settings, "class_names": FMNIST_NAMES, "normalization": "model", **keys}
