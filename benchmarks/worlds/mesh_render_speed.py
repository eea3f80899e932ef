"""MeshWorld (Mitsuba 3) render throughput against ShapeWorld and Blender (Cycles), in one run.

    .venv/bin/python benchmarks/worlds/mesh_render_speed.py [--renders 100] [--blender-renders 20]
        [--spp 16] [--threads 1] [--out /tmp/mesh_render_speed]

The same scenes for all three: ShapeWorld's test objects (exported as meshes, so the geometry is
identical), the same random Table-1 conditions, the same image size; Mitsuba and Blender render the
same meshes, ground plane, sun, point light, camera and ambient world with the same samples per
pixel and path depth, on the same number of CPU threads. Reported per renderer and size: renders/s
and renders per CPU-second (process CPU time: on a shared machine wall times swing with the other
jobs, CPU time much less), medians over repeats for the in-process renderers (interleaved), and
over renders for Blender (scene updates included, start-up excluded).

Mitsuba is measured three ways: every query with its own lighting (one render call each: the
examination and training case), and ``q`` queries of one instance sharing their lighting rendered
in one pass by a ``batch`` sensor against the same queries one call each.

Then the cost of a 55 x 500 examination in this world (55 instances, 500 queries each): measured
on ``--exam-steps`` steps of 55 queries (one per instance, as GP-UCB's q = 1 asks them), times
500 steps; rendering only (the examiner's own time is benchmarks/worst_case/examiner_speed.py's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from advaudit.runtime import configure_threads
from advaudit.worlds.meshes import MeshWorld
from advaudit.worlds.meshes.export_shapes import export_shapes
from advaudit.worlds.meshes.renderer import FOV_DEGREES, GROUND_HALF_SIZE, _spherical, camera_frame, sun_direction
from advaudit.worlds.shapes import ShapeWorld

HERE = Path(__file__).resolve().parent


def interleaved(cases: dict[str, Callable[[], object]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall, process-CPU) seconds per case over ``repeats`` rounds, the cases interleaved
    within each round (so a change in the machine's load hits all of them alike); one warm-up
    call each first (Mitsuba's JIT compiles its kernels then)."""
    for fn in cases.values():
        fn()
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in cases}


def to_blender(v: np.ndarray) -> list[float]:
    """y-up (MeshWorld) -> z-up (Blender) coordinates: (x, y, z) -> (x, -z, y)."""
    return [float(v[0]), float(-v[2]), float(v[1])]


def blender_camera_matrix(distance: float, azimuth: float, elevation: float, roll: float) -> list[list[float]]:
    """Blender's camera world matrix (columns right, up, back, origin) for MeshWorld's orbit camera."""
    origin, up = camera_frame(distance, azimuth, elevation, roll)
    forward = -origin / np.linalg.norm(origin)
    right = np.cross(forward, up)
    columns = [to_blender(right), to_blender(up), to_blender(-forward), to_blender(origin)]
    matrix = np.eye(4)
    for i, c in enumerate(columns):
        matrix[:3, i] = c
    return matrix.tolist()


def blender_job(world: MeshWorld, z, s: torch.Tensor, size: int, args, out: Path) -> Path:
    """Write the Blender job (meshes in z-up, one entry per render) and return its path."""
    renderer = world.renderer
    meshes, renders = [], []
    for n, index in enumerate(z.data["mesh"].tolist()):
        mesh = world.mesh(index)
        v = mesh.vertices * renderer.object_radius
        meshes.append({"vertices": np.stack([v[:, 0], -v[:, 2], v[:, 1]], 1).round(6).tolist(),
                       "faces": mesh.faces.tolist()})
        for cond in s[n].double().numpy():
            renders.append({
                "object": n, "albedo": z.data["albedo"][n].tolist(),
                "ground_z": float(mesh.lowest * renderer.object_radius) if cond[8] * np.sin(np.radians(cond[10]))
                > mesh.lowest * renderer.object_radius else -1e4,
                "camera": blender_camera_matrix(*cond[8:12]),
                "sun_direction": to_blender(sun_direction(*cond[0:3])), "sun_strength": float(cond[3]),
                "lamp_position": to_blender(_spherical(*cond[5:8])), "lamp_watts": float(cond[4]) * 1000.0})
    h = GROUND_HALF_SIZE
    job = {"meshes": meshes, "renders": renders[: args.blender_renders], "spp": args.spp, "size": size,
           "max_bounces": args.max_depth - 2, "threads": args.threads, "ambient": args.ambient,
           "fov": FOV_DEGREES, "ground_albedo": [0.36, 0.33, 0.30], "save_first": 4,
           "ground_vertices": [[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]]}
    path = out / "job.json"
    path.write_text(json.dumps(job))
    return path


def blender_seconds(job: Path) -> tuple[float, float] | None:
    """Median (wall, process-CPU) seconds per render in Blender, or ``None`` without Blender."""
    blender = shutil.which("blender")
    if blender is None:
        return None
    subprocess.run([blender, "-b", "--factory-startup", "--python-exit-code", "1", "--python",
                    str(HERE / "mesh_blender_render.py"), "--", str(job)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = json.loads((job.parent / "blender_times.json").read_text())
    return statistics.median(times["seconds"]), statistics.median(times["cpu_seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=int, default=100, help="renders per size for ShapeWorld and Mitsuba")
    parser.add_argument("--blender-renders", type=int, default=20)
    parser.add_argument("--q", type=int, default=10, help="cameras per instance sharing lighting (batch sensor)")
    parser.add_argument("--spp", type=int, default=16)
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--ambient", type=float, default=0.15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--exam-steps", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--out", default="/tmp/mesh_render_speed")
    args = parser.parse_args()
    configure_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = out / "meshes"
    if not (root / "manifest.json").exists():
        export_shapes(root, {"train": 0, "val": 0, "test": 6})  # 60 objects: 55 for the examination
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores); threads per renderer: "
          f"{args.threads}; spp {args.spp}, path depth {args.max_depth}")
    print("| renderer | size | renders/s (wall) | renders per CPU-second | note |\n|---|---|---|---|---|")
    rows = {}
    for size in args.sizes:
        world = MeshWorld(str(root), image_size=size, spp=args.spp, max_depth=args.max_depth, ambient=args.ambient,
                          split_fractions={"train": 0, "val": 0, "test": 1}, threads=args.threads)
        batched_world = MeshWorld(str(root), image_size=size, spp=args.spp, max_depth=args.max_depth,
                                  ambient=args.ambient, split_fractions={"train": 0, "val": 0, "test": 1},
                                  threads=args.threads, batch_cameras=True)
        shapes = ShapeWorld(image_size=size, instances_per_class={"test": 6})
        one_per_class = torch.arange(0, 60, 6)
        z_mesh, z_shape = world.instances("test").subset(one_per_class), shapes.instances("test").subset(one_per_class)
        per = max(1, args.renders // len(z_mesh))
        s = world.random_conditions(len(z_mesh), per, torch.Generator().manual_seed(0))
        shared = s[:, : args.q].clone()
        shared[:, :, :8] = shared[:, :1, :8]  # q cameras per instance under one lighting
        counts = {"shapeworld": s.shape[0] * s.shape[1], "mitsuba": s.shape[0] * s.shape[1],
                  "batch_sensor": shared.shape[0] * shared.shape[1], "one_call_each": shared.shape[0] * shared.shape[1]}
        times = interleaved({"shapeworld": lambda: shapes.render(z_shape, s),
                             "mitsuba": lambda: world.render(z_mesh, s),
                             "batch_sensor": lambda: batched_world.render(z_mesh, shared),
                             "one_call_each": lambda: world.render(z_mesh, shared)}, args.repeats)
        rates = {k: (counts[k] / wall, counts[k] / cpu) for k, (wall, cpu) in times.items()}
        job_dir = out / f"blender{size}"
        job_dir.mkdir(exist_ok=True)
        blender = blender_seconds(blender_job(world, z_mesh, s, size, args, job_dir))
        rates["blender"] = (1 / blender[0], 1 / blender[1]) if blender else (float("nan"), float("nan"))
        rows[size] = rates
        notes = {"shapeworld": ("ShapeWorld (PyTorch, batched)", f"{counts['shapeworld']} renders in one call"),
                 "mitsuba": ("MeshWorld (Mitsuba 3, llvm_ad_rgb)", "each query its own lighting (examination, training)"),
                 "batch_sensor": (f"MeshWorld, q={args.q} cameras sharing lighting, batch sensor",
                                  f"one pass per instance; x{rates['batch_sensor'][1] / rates['one_call_each'][1]:.2f} "
                                  "per CPU-second vs one call each"),
                 "one_call_each": (f"MeshWorld, the same q={args.q} queries, one call each", ""),
                 "blender": (f"Blender {blender_version()} (Cycles, CPU)",
                             f"{args.blender_renders} of the same scenes; Mitsuba x{rates['mitsuba'][1] / rates['blender'][1]:.1f} "
                             "per CPU-second")}
        for key, (name, note) in notes.items():
            print(f"| {name} | {size} | {rates[key][0]:,.1f} | {rates[key][1]:,.1f} | {note} |", flush=True)
    # the cost of a 55 x 500 examination, from a measured shorter run
    size = args.sizes[0]
    world = MeshWorld(str(root), image_size=size, spp=args.spp, max_depth=args.max_depth, ambient=args.ambient,
                      split_fractions={"train": 0, "val": 0, "test": 1}, threads=args.threads)
    z = world.instances("test")
    z = z.subset(torch.arange(55) % len(z))
    generator = torch.Generator().manual_seed(1)
    world.render(z.subset(torch.arange(10)), world.random_conditions(10, 1, generator))  # warm-up
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(args.exam_steps):
        world.render(z, world.random_conditions(len(z), 1, generator))
    per_step = (time.perf_counter() - start) / args.exam_steps
    cpu_step = (time.process_time() - cpu_start) / args.exam_steps
    hours = lambda renders_per_s: 55 * 500 / renders_per_s / 3600  # noqa: E731
    print(f"\n55 x 500 examination at {size} px, {args.spp} spp, rendering only: {per_step:.2f} s wall / "
          f"{cpu_step:.2f} CPU-s per step of 55 renders (measured over {args.exam_steps} steps) -> "
          f"{per_step * 500 / 3600:.2f} h wall / {cpu_step * 500 / 3600:.2f} CPU-h for 500 steps (extrapolated); "
          f"at the CPU rates above: Blender {hours(rows[size]['blender'][1]):.2f} CPU-h, "
          f"ShapeWorld {hours(rows[size]['shapeworld'][1]):.3f} CPU-h")
    print(f"load at the end: {os.getloadavg()[0]:.2f}")
    (out / "results.json").write_text(json.dumps({"rows": rows, "exam_step_seconds": per_step,
                                                  "exam_step_cpu_seconds": cpu_step,
                                                  "args": vars(args)}, indent=1))


def blender_version() -> str:
    blender = shutil.which("blender")
    if blender is None:
        return "(not installed)"
    text = subprocess.run([blender, "--version"], capture_output=True, text=True).stdout
    return text.split()[1] if text.startswith("Blender") else "?"


if __name__ == "__main__":
    main()
