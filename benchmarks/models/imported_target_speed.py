"""Is an imported model audited as fast as the same model trained by advaudit?

One network (advaudit's ShapeWorld ResNet-18, random weights: speed does not depend on them) is
audited five ways: advaudit's own ``target.pt``; a target block naming its builder with a
``state_dict`` file; and the files ``advaudit import`` writes from that block, from a TorchScript
trace and from an ONNX export. For each: the worst-case audit's hot path (``predict_proba`` on a
batch of ShapeWorld renders) and a short worst-case examination end to end (``examine``'s own
queries/s: render, validity, forward, examiner, records). Runs are interleaved (native, then each
imported form, ``--repeats`` times) so all see the same machine load; the table gives medians
and each form's ratio to the native target measured in the same rounds.

    .venv/bin/python benchmarks/models/imported_target_speed.py [--repeats 3] [--threads 1] [--width 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from advaudit.confutil import override_value  # noqa: E402
from advaudit.models import TorchTarget, load_target, save_target  # noqa: E402
from advaudit.models.targets.imported.store import import_target  # noqa: E402
from advaudit.models.nets import build_net  # noqa: E402
from advaudit.runtime import configure_threads  # noqa: E402
from advaudit.worlds.shapes import ShapeWorld  # noqa: E402

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def compose_config(name: str, overrides: list[str], run_dir: Path):
    """``conf/<name>.yaml`` composed with ``overrides``, writing under ``run_dir``."""
    import advaudit.registry  # noqa: F401  (registers the schemas)
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name=name, overrides=[*overrides, f"paths.root_dir={run_dir}", f"paths.output_dir={run_dir}"])
    GlobalHydra.instance().clear()
    return cfg

RESNET18 = "advaudit.models.nets.resnet18"
CLASSES = ["bottle", "can", "mug", "vase", "barrel", "table", "chair", "lamp", "bowl", "stool"]


def make_forms(root: Path, width: int) -> dict[str, object]:
    """The same network as advaudit's target.pt and as four imported forms; ``{name: target value}``."""
    world = ShapeWorld(image_size=32)
    torch.manual_seed(0)
    shape = [3, 32, 32]
    net = build_net(RESNET18, shape, 10, width=width).eval()
    norm = {"mean": [0.45, 0.45, 0.45], "std": [0.25, 0.25, 0.25]}
    meta = {"arch": RESNET18, "arch_params": {"width": width}, "class_names": list(world.class_names),
            "input_shape": shape, "normalization": norm}
    native = save_target(TorchTarget(net, meta).eval(), root / "native.pt")
    torch.save(net.state_dict(), root / "weights.pt")
    common = {"class_names": list(world.class_names), "input_shape": shape, "normalization": norm}
    block = {"model": {"_target_": RESNET18, "input_shape": shape, "num_classes": 10, "width": width},
             "path": str(root / "weights.pt"), **common}
    torch.jit.trace(net, torch.rand(4, *shape)).save(str(root / "net.ts"))
    torch.onnx.export(net, (torch.rand(4, *shape),), str(root / "net.onnx"), dynamo=True,
                      dynamic_shapes={"x": {0: "batch"}}, verbose=False)
    import_target(block, root / "imported_export.pt")
    import_target({"path": str(root / "net.ts"), **common}, root / "imported_torchscript.pt")
    import_target({"path": str(root / "net.onnx"), **common}, root / "imported_onnx.pt")
    return {"native target.pt": str(native), "block (state_dict)": block,
            "import -> torch.export": str(root / "imported_export.pt"),
            "import -> TorchScript": str(root / "imported_torchscript.pt"),
            "import -> ONNX (onnxruntime)": str(root / "imported_onnx.pt")}


def forward_rate(value: object, images: torch.Tensor, reps: int = 3) -> float:
    """Images per second through ``predict_proba`` (the worst-case audit's scoring call)."""
    target = load_target(value)
    target.predict_proba(images[:64])
    start = time.perf_counter()
    for _ in range(reps):
        target.predict_proba(images)
    return reps * len(images) / (time.perf_counter() - start)


def examination_rate(value: object, root: Path, name: str, budget: int) -> float:
    """Queries per second of a worst-case examination (10 instances, random search, ShapeWorld 32 px)."""
    from advaudit.tasks import examine

    target = value if not isinstance(value, dict) else override_value(value)
    cfg = compose_config("examine", [f"target={target}", "audit=worst_case", "world=shapes", "examiner=random",
                                     f"audit.budget={budget}", f"audit.report_budgets=[0,{budget}]", "logger=none",
                                     "audit.selection=random", "audit.n_instances=10",
                                     "audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]"], root / name)
    start = time.perf_counter()
    examine(cfg)
    return 10 * budget / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--budget", type=int, default=320, help="queries per instance of the examination")
    parser.add_argument("--batch", type=int, default=1024, help="renders per predict_proba call")
    args = parser.parse_args()
    configure_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="imported_speed_"))
    forms = make_forms(root, args.width)
    world = ShapeWorld(image_size=32)
    instances = world.instances("test")
    generator = torch.Generator().manual_seed(0)
    pick = instances.subset(torch.arange(len(instances))[:16])
    images = world.render(pick, world.random_conditions(16, args.batch // 16, generator))
    forward: dict[str, list[float]] = {name: [] for name in forms}
    examination: dict[str, list[float]] = {name: [] for name in forms}
    for rep in range(args.repeats):
        for i, (name, value) in enumerate(forms.items()):
            forward[name].append(forward_rate(value, images))
            examination[name].append(examination_rate(value, root, f"r{rep}_{i}", args.budget))
    native = "native target.pt"
    print("| form | predict_proba images/s | ratio | examination queries/s | ratio |\n|---|---|---|---|---|")
    for name in forms:
        f_ratio = statistics.median(a / b for a, b in zip(forward[name], forward[native]))
        e_ratio = statistics.median(a / b for a, b in zip(examination[name], examination[native]))
        print(f"| {name} | {statistics.median(forward[name]):.0f} | {f_ratio:.2f} | "
              f"{statistics.median(examination[name]):.0f} | {e_ratio:.2f} |")


if __name__ == "__main__":
    main()
