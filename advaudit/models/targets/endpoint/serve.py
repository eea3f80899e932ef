"""Serve a classifier file over the Open Inference Protocol on this machine, with MLServer or KServe.

    python -m advaudit.models.targets.endpoint.serve model.onnx --name fmnist --input-shape 1 28 28 --port 8080
    python -m advaudit.models.targets.endpoint.serve outputs/train/runs/<time>/checkpoints/target.pt --name fmnist

writes an MLServer model repository for the file (an advaudit target file is traced to TorchScript first,
raw ``[0, 1]`` inputs to logits, its normalisation inside) (``settings.json``, ``<name>/model-settings.json``
naming :class:`~advaudit.models.targets.endpoint.runtime.ServedClassifier`) and runs ``mlserver start`` on it
until interrupted; ``--server kserve`` runs KServe's ``ModelServer`` on the same files instead
(:mod:`~advaudit.models.targets.endpoint.kserve_runtime`), which also reads binary tensors. Both serve the
protocol's gRPC service too, on ``--grpc-port``. Tests, benchmarks
and docs/deployed-model.md use :class:`LocalServer` to stand up the same servers on free ports.
MLServer is a development dependency (``pip install -e '.[dev]'``); KServe pins FastAPI and pandas
versions MLServer cannot share, so ``make kserve`` installs it into an environment of its own,
``.venv-kserve``, that reads everything else from ``.venv``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import torch

from advaudit.errors import AdvauditError, require
from advaudit.models.targets.formats import identify
from advaudit.models.targets.io import load_target

RUNTIME = "advaudit.models.targets.endpoint.runtime.ServedClassifier"
SERVERS = ("mlserver", "kserve")
#: the largest gRPC message either server takes or sends (their defaults, 4 MB and 8 MB, hold 6 or 13 images of 224 px)
GRPC_MESSAGE_LIMIT = 256 * 2**20
#: where KServe's environment is looked for (``make kserve`` makes the first), unless $ADVAUDIT_KSERVE_PYTHON names one
KSERVE_VENV = ".venv-kserve"


@dataclass
class ServedModel:
    """One model of the repository: its name and file, the input it takes and its deployment choices.

    ``declare_input=False`` leaves the input out of the model's metadata (a server that does not say).
    ``extra`` goes to the runtime's ``parameters.extra`` (``precision``, ``token_env``, ``fail``, ...).
    """

    name: str
    path: str | Path
    input_shape: list[int]
    version: str = "1"
    input_name: str = "input"
    declare_input: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def settings(self) -> dict[str, Any]:
        """The model's ``model-settings.json``."""
        inputs = [{"name": self.input_name, "datatype": "FP32", "shape": [-1, *self.input_shape]}]
        return {"name": self.name, "implementation": RUNTIME, "inputs": inputs if self.declare_input else [],
                "parameters": {"uri": str(Path(self.path).resolve()), "version": self.version,
                               "extra": {"input_name": self.input_name, "input_shape": self.input_shape,
                                         **self.extra}}}


def free_port(taken: tuple[int, ...] = ()) -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, and none of ``taken`` (picked before, not yet bound)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in taken:
            return port


class LocalServer:
    """A server of :class:`ServedModel` on free ports of 127.0.0.1, its files in ``folder``: ``mlserver start``
    on a model repository, or (``server="kserve"``) KServe's ``ModelServer``
    (:mod:`~advaudit.models.targets.endpoint.kserve_runtime`, in the environment :func:`kserve_python` finds)."""

    def __init__(self, models: list[ServedModel], folder: str | Path, port: int | None = None,
                 server: str = "mlserver", options: dict[str, Any] | None = None,
                 grpc_port: int | None = None) -> None:
        require(server in SERVERS, f"server={server!r}; use one of {', '.join(SERVERS)}")
        self.models, self.folder, self.server = list(models), Path(folder), server
        self.options = dict(options or {})  # KServe's: raw_binary (kserve_runtime.keep_raw_bytes)
        self.port: int | None = port  # None: free ports are picked when the server starts
        self.grpc_port: int | None = grpc_port  # the gRPC service's (None: picked as the REST port is)
        self.process: subprocess.Popen | None = None
        self.log = self.folder / f"{server}.log"

    @property
    def url(self) -> str:
        """The REST address, ``http://127.0.0.1:<port>`` (known once the server has started, or a port was given)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> "LocalServer":
        """Write the repository, start the server on its ports (free ones picked now, where none was given; the same
        again on a restart), and wait until every model is ready."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.grpc_port = self.grpc_port or free_port(taken=(self.port,))
        grpc_port = self.grpc_port
        if self.server == "kserve":
            setup = {"http_port": self.port, "grpc_port": grpc_port, "grpc_max_message_length": GRPC_MESSAGE_LIMIT,
                     "models": [m.settings() for m in self.models], **self.options}
            (self.folder / "kserve.json").write_text(json.dumps(setup, indent=1))
            python = kserve_python()
            require(python is not None, "KServe is not installed: `make kserve` makes its environment (.venv-kserve; "
                    "it cannot share MLServer's), or set ADVAUDIT_KSERVE_PYTHON to a Python that imports kserve")
            command = [str(python), "-m", "advaudit.models.targets.endpoint.kserve_runtime", str(self.folder / "kserve.json")]
        else:
            settings = {"host": "127.0.0.1", "http_port": self.port, "grpc_port": grpc_port,
                        "grpc_max_message_length": GRPC_MESSAGE_LIMIT, "metrics_endpoint": None,
                        "parallel_workers": 0, "debug": False, "gzip_enabled": False, "load_models_at_startup": True}
            (self.folder / "settings.json").write_text(json.dumps(settings, indent=1))
            for model in self.models:
                (self.folder / model.name).mkdir(exist_ok=True)
                (self.folder / model.name / "model-settings.json").write_text(json.dumps(model.settings(), indent=1))
            command = [sys.executable, "-m", "mlserver.cli.main", "start", str(self.folder)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[4]),
                                                            os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            require(self.process is not None and self.process.poll() is None, f"the {self.server} process ended "
                    f"(exit {self.process.returncode if self.process else None}); its log: {self.log}")
            try:
                if all(requests.get(f"{self.url}/v2/models/{m.name}/ready", timeout=2).ok for m in self.models):
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        self.stop()
        raise AdvauditError(f"{self.server} did not get ready within {timeout:g} s; its log: {self.log}")

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crashed deployment ends."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> "LocalServer":
        return self.start() if self.process is None else self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def kserve_python() -> Path | None:
    """The Python that runs KServe: ``$ADVAUDIT_KSERVE_PYTHON``, else ``.venv-kserve`` beside this checkout or beside
    the running environment, else this one if it imports kserve; ``None`` where there is none."""
    named = os.environ.get("ADVAUDIT_KSERVE_PYTHON")
    if named:
        return Path(named)
    for root in (Path(__file__).resolve().parents[4], Path(sys.prefix).parent):
        if (root / KSERVE_VENV / "bin" / "python").exists():
            return root / KSERVE_VENV / "bin" / "python"
    return Path(sys.executable) if importlib.util.find_spec("kserve") else None


def script_target(path: Path, out: Path) -> tuple[Path, list[int]]:
    """An advaudit target file as TorchScript at ``out`` (raw inputs -> logits); returns it and one input's shape."""
    target = load_target(path, channels_last=False).eval()
    example = torch.rand(2, *target.input_shape)
    with torch.no_grad():
        traced = torch.jit.trace(_Logits(target), example)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.jit.save(traced, str(out))
    return out, list(target.input_shape)


class _Logits(torch.nn.Module):
    """A target's calibrated logits (normalisation inside, divided by its temperature) as a module torch.jit.trace
    can record: the served model's softmax is the checkpoint's ``predict_proba``."""

    def __init__(self, target: Any) -> None:
        super().__init__()
        self.target = target

    def forward(self, x: Any) -> Any:
        return self.target.logits(x) / self.target.temperature  # calibrated, as predict_proba scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advaudit.models.targets.endpoint.serve", description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the model: an .onnx file, a TorchScript .pt (torch.jit.save) or an advaudit "
                        "target file (train.py's target.pt, `advaudit import`'s output)")
    parser.add_argument("--name", required=True, help="the model's name on the server")
    parser.add_argument("--input-shape", type=int, nargs="+", default=None, help="one input's shape, e.g. 1 28 28 "
                        "(an advaudit target file says its own)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--grpc-port", type=int, default=8081, help="the Open Inference Protocol's gRPC service")
    parser.add_argument("--version", default="1")
    parser.add_argument("--precision", choices=["float32", "half"], default="float32",
                        help="half: run a TorchScript model in float16, as a deployment might")
    parser.add_argument("--folder", default="outputs/serve", help="where the model repository is written")
    parser.add_argument("--server", choices=SERVERS, default="mlserver", help="kserve: KServe's ModelServer, which "
                        "also reads binary tensors (its environment: make kserve)")
    args = parser.parse_args(argv)
    for number in (signal.SIGTERM, signal.SIGINT):  # either stops the server too (SIGINT is ignored under `&`)
        signal.signal(number, signal.default_int_handler)
    server = None
    try:
        path, shape = Path(args.path), args.input_shape
        if identify(path).kind == "advaudit":
            path, shape = script_target(path, Path(args.folder) / f"{args.name}.pt")
        require(shape is not None, "--input-shape is required for an ONNX or TorchScript file, e.g. --input-shape 1 28 28")
        model = ServedModel(args.name, path, list(shape), version=args.version, extra={"precision": args.precision})
        server = LocalServer([model], args.folder, port=args.port, server=args.server, grpc_port=args.grpc_port)
        server.start()
        print(f"serving {args.path} as {server.url}/v2/models/{args.name}, gRPC on 127.0.0.1:{server.grpc_port} "
              f"(log: {server.log}); Ctrl-C stops it", flush=True)
        server.process.wait()
    except AdvauditError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
