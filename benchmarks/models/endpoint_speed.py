"""What does auditing a model through its inference server cost, against the same model file audited locally?

Servers started by advaudit.models.targets.endpoint.serve (on 127.0.0.1, one torch thread each, sharing the machine
with the client) serve the same two TorchScript models: a small CNN on 28-px Fashion-MNIST inputs and a ResNet-18
on 224-px inputs (random weights: speed does not depend on them). MLServer reads JSON on REST; KServe's ModelServer
also reads REST's binary tensors (and turns them into Python lists); both serve the protocol's gRPC service, where
tensors go as raw bytes. Two what-ifs sit beside them: KServe keeping REST's binary tensors as bytes, and KServe
whose served model hands freed memory back to the system (the C library's default, which advaudit's served model
no longer keeps: runtime.keep_freed_memory).

28 px: the same worst-case examination (TransformWorld, random search, ``--instances`` x
``--budget`` queries in iterations of q = 10, so every step scores one batch of ``instances x 10``
inputs) of the local TorchScript file and of the served model in each form of ``FORMS``, after a
round of short ones that warms every form up, with ``max_batch`` equal to that batch (one request
per step: the same batch size on both sides), interleaved ``--repeats`` times. The examination's own clock
(``seconds_examination``: render, forward, examiner, records) is compared; beside it the seconds the
client waited on the server and the server's own inference time (the runtimes report it in each
answer's ``parameters``), and the examination's clock split in two (:func:`scoring_clock`): the seconds its steps
spent in the target's ``predict_proba`` (the local forward pass; through a server the request, the client's
conversions included) and the rest (render, examiner, records: the same work on both sides).

224 px: one batch of ``--batch`` images sent ``--repeats`` times in each form, its cost split into
encoding (the client writing the body and reading the answer), the server's own inference, and the
rest of the request (transfer on loopback plus the server's parsing of the body and writing of the answer).

    OMP_NUM_THREADS=1 WANDB_MODE=disabled .venv/bin/python benchmarks/models/endpoint_speed.py --repeats 3 --budget 300

KServe's environment (``make kserve``, .venv-kserve) must exist.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from advaudit.confutil import override_value  # noqa: E402
from advaudit.models.targets.endpoint.client import EndpointClient  # noqa: E402
from advaudit.models.targets.endpoint.serve import LocalServer, ServedModel  # noqa: E402
from advaudit.models.targets.endpoint.settings import EndpointSettings  # noqa: E402
from advaudit.runtime import configure_threads  # noqa: E402

NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
DATASET = {"_target_": "advaudit.data.fashion_mnist.FashionMNISTDataModule", "limit": {"train": 100, "val": 60,
                                                                                        "test": 500}}


def small_cnn() -> nn.Module:
    """A Fashion-MNIST CNN of advaudit's size (two conv blocks, 16/32 channels): ``[B, 1, 28, 28]`` -> ``[B, 10]``."""
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 10)).eval()


def write_models(root: Path) -> tuple[Path, Path]:
    import torchvision

    torch.manual_seed(0)
    cnn, resnet = root / "cnn28.pt", root / "resnet224.pt"
    torch.jit.save(torch.jit.trace(small_cnn(), torch.rand(2, 1, 28, 28)), str(cnn))
    torch.jit.save(torch.jit.trace(torchvision.models.resnet18(num_classes=10).eval(), torch.rand(2, 3, 224, 224)),
                   str(resnet))
    return cnn, resnet


#: seconds the examination's steps spent in the target's predict_proba (scoring_clock)
SCORING = {"seconds": 0.0, "inside": False}


def scoring_clock() -> None:
    """Time the target's ``predict_proba`` (local and black-box targets) inside the examination's steps only
    (instance selection and the report also score, outside the examination's clock) into ``SCORING``."""
    from advaudit.audits import worst_case
    from advaudit.models.targets.imported.targets import BlackBoxTarget
    from advaudit.models.targets.target import TorchTarget

    def step(original: Callable[..., Any]) -> Callable[..., Any]:
        def stepped(*args: Any, **kwargs: Any) -> Any:
            SCORING["inside"] = True
            try:
                return original(*args, **kwargs)
            finally:
                SCORING["inside"] = False
        return stepped

    def timed(original: Callable[..., Any]) -> Callable[..., Any]:
        def scored(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                SCORING["seconds"] += (time.perf_counter() - start) if SCORING["inside"] else 0.0
        return scored

    worst_case.examine_step = step(worst_case.examine_step)
    for cls in (TorchTarget, BlackBoxTarget):
        cls.predict_proba = timed(cls.predict_proba)


def examination(block: dict, run_dir: Path, instances: int, budget: int) -> dict:
    import advaudit.registry  # noqa: F401  (registers the schemas)
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from advaudit.tasks import examine

    overrides = [f"target={override_value(block)}", "audit=worst_case", "world=transforms", "examiner=random",
                 "examiner.q=10", "audit.selection=random", f"audit.n_instances={instances}", f"audit.budget={budget}",
                 f"audit.report_budgets=[0,{budget}]", "audit.validity.reference=null", "logger=none", "threads=1",
                 f"paths.root_dir={run_dir}", f"paths.output_dir={run_dir}"]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(Path(__file__).resolve().parents[2] / "conf"), version_base="1.3"):
        cfg = compose(config_name="examine", overrides=overrides)
    GlobalHydra.instance().clear()
    SCORING["seconds"] = 0.0
    return {**examine(cfg), "seconds_scoring": SCORING["seconds"]}


#: the served forms: (name, server, endpoint settings). kserve-raw: KServe keeping REST's binary tensors as bytes
#: (kserve_runtime.keep_raw_bytes, a what-if: stock KServe 0.21 turns them into Python lists); kserve-release: KServe
#: whose served model hands freed memory back to the system (glibc's default; runtime.keep_freed_memory undone)
FORMS = [("MLServer JSON", "mlserver", {"binary": False}), ("MLServer gRPC", "mlserver", {"protocol": "grpc"}),
         ("KServe JSON", "kserve", {"binary": False}), ("KServe binary", "kserve", {"binary": True}),
         ("KServe gRPC", "kserve", {"protocol": "grpc"}),
         ("KServe gRPC, memory released", "kserve-release", {"protocol": "grpc"}),
         ("KServe binary, bytes kept", "kserve-raw", {"binary": True})]


def form_endpoint(server: LocalServer, settings: dict) -> dict:
    """The endpoint block's address and settings for a form: the gRPC port where it speaks gRPC."""
    port = server.grpc_port if settings.get("protocol") == "grpc" else server.port
    return {"url": f"http://127.0.0.1:{port}", **settings}


def at_28px(servers: dict[str, LocalServer], cnn: Path, root: Path, args: argparse.Namespace) -> list[dict]:
    batch = args.instances * 10
    local = {"path": str(cnn), "class_names": NAMES, "input_shape": [1, 28, 28], "normalization": "model",
             "dataset": DATASET}
    blocks = [("local file", local)] + [
        (name, {"endpoint": {**form_endpoint(servers[server], settings), "model": "cnn28", "max_batch": batch,
                             "concurrency": 1},
                "class_names": NAMES, "normalization": "model", "dataset": DATASET})
        for name, server, settings in FORMS]
    rows = []
    for repeat in range(-1, args.repeats):  # round -1 warms every form up (imports, caches, the servers) unrecorded
        for name, block in blocks:
            result = examination(block, root / f"{name.replace(' ', '_').replace(',', '')}_{repeat}", args.instances,
                                 args.budget if repeat >= 0 else 20)
            if repeat < 0:
                continue
            record = result.get("endpoint", {})
            rows.append({"form": name, "repeat": repeat, "seconds": result["seconds_examination"],
                         "scoring": round(result["seconds_scoring"], 3),
                         "waiting": record.get("seconds_waiting"), "server": record.get("server_seconds"),
                         "encoding": (record.get("seconds_encoding") or 0) + (record.get("seconds_decoding") or 0)
                         if record else None, "inputs": record.get("inputs"), "binary": record.get("binary")})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def at_224px(servers: dict[str, LocalServer], args: argparse.Namespace) -> dict[str, dict]:
    x = np.random.default_rng(0).random((args.batch, 3, 224, 224), dtype=np.float32)
    clients = {}
    for name, server, settings in FORMS:
        endpoint = {**form_endpoint(servers[server], settings), "binary": str(settings.get("binary", "auto")).lower()}
        clients[name] = EndpointClient(EndpointSettings(**endpoint, model="resnet224", concurrency=1,
                                                        max_batch=args.batch))
        clients[name].connect()
        clients[name].predict(x, "input", "FP32")  # warm-up
    parts = {name: {k: [] for k in ("wall", "encoding", "server", "rest", "bytes")} for name in clients}
    for _ in range(args.repeats):
        for name, client in clients.items():
            before = dict(client.stats), client.server_seconds or 0.0
            start = time.perf_counter()
            client.predict(x, "input", "FP32")
            wall = time.perf_counter() - start
            encoding = sum(client.stats[k] - before[0][k] for k in ("seconds_encoding", "seconds_decoding"))
            server_time = (client.server_seconds or 0.0) - before[1]
            for key, value in (("wall", wall), ("encoding", encoding), ("server", server_time),
                               ("rest", wall - encoding - server_time),
                               ("bytes", client.stats["bytes_sent"] - before[0]["bytes_sent"])):
                parts[name][key].append(value)
    return {name: {**{k: statistics.median(v) for k, v in parts[name].items()}, "batch": args.batch}
            for name in clients}


def summary(rows: list[dict], split: dict[str, dict], args: argparse.Namespace) -> str:
    """The run's two tables as text (medians of the repeats)."""
    locals_ = [r for r in rows if r["form"] == "local file"]
    local = statistics.median(r["seconds"] for r in locals_)
    local_scoring = statistics.median(r["scoring"] for r in locals_)
    lines = [f"28 px, {args.instances} instances x {args.budget} queries, batches of {args.instances * 10} (median "
             f"of {args.repeats}): local file {local:.2f} s, of which scoring (the forward passes) {local_scoring:.2f} "
             f"s and the rest {statistics.median(r['seconds'] - r['scoring'] for r in locals_):.2f} s"]
    for name, *_ in FORMS:
        served = [r for r in rows if r["form"] == name]
        median = {k: statistics.median(r[k] for r in served) for k in ("seconds", "scoring", "waiting", "server",
                                                                       "encoding")}
        rest = statistics.median(r["seconds"] - r["scoring"] for r in served)
        ratios = ", ".join(f"{r['seconds'] / l['seconds']:.2f}" for r, l in zip(served, locals_))
        lines.append(f"  {name}: {median['seconds']:.2f} s ({median['seconds'] / local:.2f}x; each round {ratios}); "
                     f"waiting on the server "
                     f"{median['waiting']:.2f} s, of which the server's own inference {median['server']:.2f} s; "
                     f"client encoding and decoding {median['encoding']:.2f} s; the examination's scoring "
                     f"{median['scoring']:.2f} s and the rest {rest:.2f} s")
    lines.append(f"224 px, {args.batch} images per request (median of {args.repeats}):")
    for name, part in split.items():
        lines.append(f"  {name}: {part['wall']:.3f} s = encoding {part['encoding']:.3f} + server inference "
                     f"{part['server']:.3f} + transfer and the server's parsing {part['rest']:.3f}; body "
                     f"{part['bytes'] / 1e6:.1f} MB")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--batch", type=int, default=8, help="224-px images per request")
    args = parser.parse_args()
    configure_threads(1)
    scoring_clock()
    root = Path(tempfile.mkdtemp(prefix="endpoint_speed_"))
    cnn, resnet = write_models(root)
    models = [ServedModel("cnn28", cnn, [1, 28, 28]), ServedModel("resnet224", resnet, [3, 224, 224])]
    released = [ServedModel(m.name, m.path, m.input_shape, extra={"memory": "release"}) for m in models]
    servers = {"mlserver": LocalServer(models, root / "mlserver"),
               "kserve": LocalServer(models, root / "ks", server="kserve"),
               "kserve-release": LocalServer(released, root / "ks-release", server="kserve"),
               "kserve-raw": LocalServer(models, root / "ks-raw", server="kserve", options={"raw_binary": True})}
    try:
        for server in servers.values():
            server.start()
        rows = at_28px(servers, cnn, root, args)
        split = at_224px(servers, args)
    finally:
        for server in servers.values():
            server.stop()
    print("\n" + summary(rows, split, args))
    (Path("outputs") / "endpoint_speed.json").parent.mkdir(exist_ok=True)
    Path("outputs/endpoint_speed.json").write_text(json.dumps({"rows": rows, "split_224": split}, indent=1))


if __name__ == "__main__":
    main()
