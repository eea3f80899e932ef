"""Audits at the size users run them: where an examination's time goes at 224 px.

Targets: a torchvision ResNet-50 and a timm ViT-B/16 (random weights: speed does not depend on them;
nothing downloads), each imported as a user would, by a target block with a class map (ShapeWorld's
10 classes, 3 ImageNet outputs each; every other output is ``(other)``). Worlds at 224 px: ShapeWorld,
TransformWorld over an image folder of 224-px ShapeWorld renders this script writes, and MeshWorld
(Mitsuba 3, ShapeWorld's objects exported as meshes). Examinations: ``examine.py audit=worst_case``
with random search, RL and BO, and ``audit=error_search`` over the image folder, each run by
:func:`advaudit.tasks.examine` in a fresh process (its own peak memory), with the default validity
check (ShapeWorld's reference judge, lazily judged, where the world has one).

Each run's wall time is split by timers around the real functions (a call inside another timed call
counts for the outer one): the network's own forward (``ResNet.forward`` / ``VisionTransformer.forward``:
not the resize, normalisation or class map), rendering (the world's ``render*``, with ShapeWorld's
geometric checks), the examiner (``ask``/``tell``), validity (the reference judge and the lazy
bookkeeping), records (``steps.jsonl`` and the examiner checkpoints); ``other`` is the rest of the
examination loop. Setup (checking the config, loading, instance selection, building the examiner, claiming the
run dir) and the report (with the renders
and queries it needs beyond the examiner's: the gallery and the random baseline) are timed apart. Next to
each run, the bare forward pass of the same network on the same batch size in the same process.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/scale/real_size.py --device cpu --out /tmp/real_size [--quick] \
        [--large] [--models resnet50,vit_b16] [--worlds shapes,transforms,meshes] [--examiners random,rl,bo,error_search]

Writes ``DIR/real_size.json`` (one record per run) and ``DIR/real_size.md`` (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SIZE = 224
MODELS = {"resnet50": {"_target_": "torchvision.models.resnet50", "num_classes": 1000},
          "vit_b16": {"_target_": "timm.create_model", "model_name": "vit_base_patch16_224", "pretrained": False,
                      "num_classes": 1000}}
# the sizes: (instances, q, queries per instance); error search: images in the folder per class
SIZES = {"full": {"n": 2, "random": (8, 16), "rl": (8, 16), "bo": (1, 6), "per_class": 4, "mesh_spp": 4},
         "quick": {"n": 2, "random": (4, 8), "rl": (4, 8), "bo": (1, 3), "per_class": 2, "mesh_spp": 2},
         # a GPU's batches: 16 instances x 32 proposals = 512 images per step (the CPU sizes leave a GPU idle)
         "large": {"n": 16, "random": (32, 128), "rl": (32, 128), "bo": (1, 16), "per_class": 40, "mesh_spp": 4}}
PARTS = ("forward", "render", "examiner", "validity", "records")


# -- the inputs the benchmark writes ------------------------------------------------------------------------
def write_inputs(root: Path, models: list[str], per_class: int) -> dict[str, Any]:
    """Random-weight state dicts of the networks and an image folder of 224-px ShapeWorld renders
    (``root/images/<class>/*.png``, ``per_class`` each); returns ``{model: target block}``."""
    import torch
    from hydra.utils import instantiate
    from PIL import Image

    from advaudit.worlds.shapes import ShapeWorld

    world = ShapeWorld(image_size=SIZE)
    z = world.instances("train")
    keep = torch.cat([(z.labels == c).nonzero().squeeze(1)[:per_class] for c in range(len(world.class_names))])
    z = z.subset(keep)
    images = world.render(z, world.random_conditions(len(z), 1, torch.Generator().manual_seed(0)))
    for i, (image, label) in enumerate(zip(images, z.labels.tolist())):
        folder = root / "images" / world.class_names[label]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray((image.permute(1, 2, 0) * 255).round().byte().numpy()).save(folder / f"{i:04d}.png")
    # every ImageNet output feeds one of the 10 classes (100 each), so random weights predict all of them
    class_map = {name: list(range(100 * i, 100 * i + 100)) for i, name in enumerate(world.class_names)}
    norm = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    blocks = {}
    for name in models:
        torch.manual_seed(0)
        net = instantiate(MODELS[name]).eval()
        torch.save(net.state_dict(), root / f"{name}.pt")
        blocks[name] = {"model": MODELS[name], "path": str(root / f"{name}.pt"), "class_map": class_map,
                        "input_shape": [3, SIZE, SIZE], "normalization": norm}
        with torch.inference_mode():  # error search looks among the items predicted as the most predicted class
            x = (images - torch.tensor(norm["mean"]).view(1, 3, 1, 1)) / torch.tensor(norm["std"]).view(1, 3, 1, 1)
            votes = net(x).view(len(x), 10, 100).logsumexp(-1).argmax(1).bincount(minlength=10)
        blocks[name + "/critical"] = world.class_names[int(votes.argmax())]
    return blocks


def overrides(world: str, examiner: str, root: Path, device: str, size: dict[str, Any],
              critical: str = "") -> list[str]:
    """The ``examine.py`` overrides of one run (besides the target)."""
    folder = {"_target_": "advaudit.data.folders.ImageFolderDataModule", "root": str(root / "images"),
              "image_size": SIZE, "test_fraction": 0.5}
    common = [f"device={device}", "logger=none", f"paths.cache_dir={root / 'cache'}", "seed=0"]
    if examiner == "error_search":
        return [*common, "audit=error_search", "search=low_confidence", "audit.compare=[random]",
                f"audit.critical_class={critical}", "audit.tau=0.0", "audit.replications=4", "audit.pool_size=5",
                "audit.budget=4", "audit.clamp_pool_size=true", "audit.report_at=[1,4]", "audit.metric=search/sdr@4"]
    q, budget = size[examiner]
    run = [*common, "audit=worst_case", f"examiner={examiner}", f"audit.n_instances={size['n']}",
           f"audit.budget={budget}", f"audit.report_budgets=[0,{budget}]", "audit.checkpoint_every=1000"]
    run += [f"examiner.q={q}"] if examiner != "bo" else []
    if world == "shapes":
        return [*run, "world=shapes", f"world.image_size={SIZE}"]
    if world == "transforms":
        return [*run, "world=transforms", "+world.dataset=" + _flow(folder)]
    return [*run, "world=meshes", "world.root=builtin", f"world.image_size={SIZE}", f"world.spp={size['mesh_spp']}",
            "world.threads=1", "world.builtin_instances={train:1,val:1,test:1}"]


def _flow(value: Any) -> str:
    """A value as Hydra override syntax (``{a:1,b:[x,y]}``)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_flow(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


# -- one run, in its own process ----------------------------------------------------------------------------
class Timers:
    """Wall seconds per part; a timed call inside another timed call counts for the outer one."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.active: str | None = None
        self.batches: list[int] = []

    def wrap(self, owner: Any, attribute: str, part: str) -> None:
        original = getattr(owner, attribute)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self.active is not None:
                return original(*args, **kwargs)
            self.active, start = part, time.perf_counter()
            if part == "forward":
                self.batches.append(int(args[1].shape[0]))
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part] = self.seconds.get(part, 0.0) + time.perf_counter() - start
                self.active = None

        setattr(owner, attribute, timed)


def install_timers(timers: Timers) -> None:
    """Timers around the functions whose time the table splits (see the module docstring)."""
    import timm.models.vision_transformer as vit
    import torchvision.models.resnet as resnet

    import advaudit.audits.error_search as error_search
    import advaudit.tasks as tasks
    import advaudit.audits.worst_case as worst_case
    from advaudit.audits.lazy_validity import LazyJudging
    from advaudit.examiners.bo import BOExaminer
    from advaudit.examiners.random_search import RandomExaminer
    from advaudit.examiners.rl import RLExaminer
    from advaudit.worlds.meshes.world import MeshWorld
    from advaudit.worlds.shapes.world import ShapeWorld
    from advaudit.worlds.transforms import TransformWorld
    from advaudit.worlds.validity import ValidityJudge

    timers.wrap(resnet.ResNet, "forward", "forward")
    timers.wrap(vit.VisionTransformer, "forward", "forward")
    for world in (ShapeWorld, TransformWorld, MeshWorld):
        for name in ("render", "render_checked", "render_with_masks", "render_masks"):
            if hasattr(world, name):
                timers.wrap(world, name, "render")
    for examiner in (RandomExaminer, RLExaminer, BOExaminer):
        timers.wrap(examiner, "ask", "examiner")
        timers.wrap(examiner, "tell", "examiner")
    timers.wrap(ValidityJudge, "reference_verdicts", "validity")
    timers.wrap(LazyJudging, "needed", "validity")
    timers.wrap(LazyJudging, "update", "validity")
    timers.wrap(worst_case, "append_jsonl", "records")
    timers.wrap(worst_case, "_checkpoint", "records")
    timers.wrap(tasks, "validate", "setup")
    timers.wrap(tasks, "plain_config", "setup")
    timers.wrap(worst_case, "prepare", "setup")
    # once per run, before the first query: building the examiner (RL's policy), claiming the run dir,
    # reading what a resumed run left, the lazy judge's replay of it
    for name in ("build_examiner", "RunDir", "_resume"):
        timers.wrap(worst_case, name, "setup")
    timers.wrap(LazyJudging, "replay", "setup")
    # the report's own renders and queries (the gallery, the random baseline), made in the run since resumable
    timers.wrap(worst_case, "record_fresh_conditions", "report")
    timers.wrap(worst_case, "summarise_and_report", "report")
    timers.wrap(error_search, "load_audit_target", "setup")
    timers.wrap(error_search, "write_report", "report")


def bare_forward(block: dict[str, Any], batch: int, device: str, repeats: int = 2) -> float:
    """Seconds per image of the bare network (built as the block builds it) on ``batch`` random
    images, under ``torch.inference_mode``; median of ``repeats`` after one warm-up."""
    import statistics

    import torch
    from hydra.utils import instantiate

    net = instantiate(block["model"]).eval().to(device)
    x = torch.rand(batch, 3, SIZE, SIZE, device=device)
    times = []
    with torch.inference_mode():
        for _ in range(repeats + 1):
            start = time.perf_counter()
            net(x)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    return statistics.median(times[1:]) / batch


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """One examination (``spec``: model, world, examiner, block, overrides, out, device) -> its record."""
    import torch

    from advaudit.runtime import configure_threads
    from advaudit.tasks import examine
    sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
    from imported_target_speed import compose_config  # benchmarks/ is on sys.path

    configure_threads(int(spec["threads"]))
    timers = Timers()
    install_timers(timers)
    rss_start = _peak_rss_gib()
    cfg = compose_config("examine", [f"target={_flow(spec['block'])}", *spec["overrides"]], Path(spec["out"]))
    if spec["device"] == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    summary = examine(cfg)
    wall = time.perf_counter() - start
    peak_rss = _peak_rss_gib()
    record = {k: spec[k] for k in ("model", "world", "examiner")}
    record.update({"wall_s": wall, "parts_s": timers.seconds, "forward_batches": sorted(set(timers.batches)),
                   "forward_calls": len(timers.batches), "images_forward": sum(timers.batches),
                   "peak_rss_gib": peak_rss, "rss_at_start_gib": rss_start})
    if spec["device"] == "cuda":
        record["peak_cuda_gib"] = torch.cuda.max_memory_allocated() / 2**30
    loop = wall - timers.seconds.get("setup", 0.0) - timers.seconds.get("report", 0.0)
    record["loop_s"] = loop
    record["other_s"] = loop - sum(timers.seconds.get(p, 0.0) for p in PARTS)
    record["queries"] = _queries(summary, spec)
    batch = max(timers.batches) if timers.batches else 1
    timers.active = "bare"  # the bare pass is not the examination's
    record["bare_forward_s_per_image"] = bare_forward(spec["block"], batch, spec["device"])
    record["bare_batch"] = batch
    return record


def _peak_rss_gib() -> float:
    """This process's peak resident memory (``VmHWM``: unlike ``ru_maxrss``, not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _queries(summary: dict[str, Any], spec: dict[str, Any]) -> int:
    """Model queries of the examination: instances x budget (worst case), scored items (error search)."""
    if spec["examiner"] == "error_search":
        return int(spec.get("items", 0))
    n = spec["size"]["n"]
    return n * spec["size"][spec["examiner"]][1]


# -- the table ----------------------------------------------------------------------------------------------
def table(records: list[dict[str, Any]], header: str) -> str:
    """The Markdown table of ``records`` (one row per run; a peak-GPU-memory column where a run used CUDA)."""
    cuda = any("peak_cuda_gib" in r for r in records)
    lines = [header, "",
             "| model | world | examiner | queries | queries/s | bare forward queries/s | loop s | forward | render | "
             "examiner | validity | records | other | non-model share | setup s | report s | peak RSS GiB |"
             + (" peak CUDA GiB |" if cuda else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if cuda else "")]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['world']} | {r['examiner']} | failed: {r['error']} |" + " |" * (13 + cuda))
            continue
        loop, parts = r["loop_s"], r["parts_s"]
        share = lambda s: f"{100 * s / loop:.1f}%"  # noqa: E731
        non_model = loop - parts.get("forward", 0.0)
        lines.append(
            f"| {r['model']} | {r['world']} | {r['examiner']} | {r['queries']} | {r['queries'] / loop:.2f} | "
            f"{1 / r['bare_forward_s_per_image']:.2f} (batch {r['bare_batch']}) | {loop:.1f} | "
            + " | ".join(share(parts.get(p, 0.0)) for p in PARTS) + f" | {share(r['other_s'])} | "
            f"**{share(non_model)}** | {parts.get('setup', 0.0):.1f} | {parts.get('report', 0.0):.1f} | "
            f"{r['peak_rss_gib']:.2f} |" + (f" {r.get('peak_cuda_gib', float('nan')):.2f} |" if cuda else ""))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="the smallest sizes (a smoke run)")
    parser.add_argument("--large", action="store_true", help="GPU-sized batches (16 instances x 32 proposals)")
    parser.add_argument("--models", default="resnet50,vit_b16")
    parser.add_argument("--worlds", default="shapes,transforms,meshes")
    parser.add_argument("--examiners", default="random,rl,bo,error_search")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one spec (JSON file) in this process
    args = parser.parse_args()
    if args.one:
        spec = json.loads(Path(args.one).read_text())
        Path(spec["record"]).write_text(json.dumps(run_one(spec)))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    size = SIZES["quick" if args.quick else "large" if args.large else "full"]
    work = Path(tempfile.mkdtemp(prefix="real_size_"))
    models = args.models.split(",")
    blocks = write_inputs(work, models, size["per_class"])
    records = []
    started = time.perf_counter()
    for model in models:
        for world in args.worlds.split(","):
            for examiner in args.examiners.split(","):
                if examiner == "error_search" and world != "transforms":
                    continue  # error search runs over the image folder (the transforms world's data)
                records.append(_spawn(model, world, examiner, blocks, work, args, size))
                print(json.dumps(records[-1]), flush=True)
                write_tables(out, records, args, size, started)  # after every run: a cut-off benchmark keeps its rows
    print((out / "real_size.md").read_text())


def write_tables(out: Path, records: list[dict[str, Any]], args: argparse.Namespace, size: dict[str, Any],
                 started: float) -> None:
    """``out/real_size.json`` and ``out/real_size.md`` with the runs finished so far."""
    load = os.getloadavg()
    header = (f"{args.device}, {args.threads} torch thread(s), {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores, load average {load[0]:.1f} at the end; sizes {size}; "
              f"{len(records)} runs in {time.perf_counter() - started:.0f} s")
    (out / "real_size.json").write_text(json.dumps({"machine": header, "records": records}, indent=1))
    (out / "real_size.md").write_text(table(records, header))


def _spawn(model: str, world: str, examiner: str, blocks: dict[str, Any], work: Path, args: argparse.Namespace,
           size: dict[str, Any]) -> dict[str, Any]:
    """Run one examination in a fresh process; its record, or the error's last line."""
    block = blocks[model]
    name = f"{model}_{world}_{examiner}"
    spec = {"model": model, "world": world, "examiner": examiner, "block": block, "device": args.device,
            # the examination's own thread count (unset, ``examine`` would take every core, whatever this process has)
            "overrides": [*overrides(world, examiner, work, args.device, size, blocks[f"{model}/critical"]),
                          f"threads={args.threads}"],
            "out": str(work / name),
            "threads": args.threads, "size": size, "record": str(work / f"{name}.json")}
    if examiner == "error_search":
        spec["items"] = sum(1 for _ in (work / "images").rglob("*.png"))
        spec["block"] = {**block, "dataset": {"_target_": "advaudit.data.folders.ImageFolderDataModule",
                                              "root": str(work / "images"), "image_size": SIZE, "test_fraction": 0.5}}
    (work / f"{name}_spec.json").write_text(json.dumps(spec))
    search_path = os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")]))
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": search_path}
    done = subprocess.run([sys.executable, __file__, "--out", args.out, "--one", str(work / f"{name}_spec.json")],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return {"model": model, "world": world, "examiner": examiner, "error": (lines or ["?"])[-1][:200],
                "stderr_tail": lines[-40:]}
    return json.loads(Path(spec["record"]).read_text())


if __name__ == "__main__":
    main()
