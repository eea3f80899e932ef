"""CPU milliseconds per ``render_geometric`` of a worst-case examination's step on the demo ShapeWorld: one
renderer call on a union table of the classes present against one call per class, and ShapeWorld at a
git revision (``--baseline``), interleaved repeat by repeat in one process (so all see the same load).

The world, instances and conditions are the examination's (``examine.py audit=worst_case examiner=rl
audit.n_instances=80`` on the demo target): a step renders every instance under ``q`` = 16 conditions.
Sizes: a shard of ``audit.shards=8`` (10 instances, one per class: ``shard_rows``), of 4, of 2, and the
one job (80). ``--sizes 64`` also renders the same scenes at 64 px (``with_image_size``). Checks that
every variant draws the same images and checks, bit for bit.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/worlds/render_classes.py [--baseline main] [--repeats 15]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch

from advaudit.audits.shards import shard_rows
from advaudit.audits.worst_case import prepare
from advaudit.runtime import MEMORY_CHOICES, configure_memory, configure_threads
import advaudit.worlds.shapes.world as world_module

sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from revision import package_module_at_revision  # noqa: E402  (benchmarks/ is on sys.path)

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = ["audit=worst_case", "examiner=rl", "audit.n_instances=80", "audit.budget=400", "seed=0", "threads=1",
             "logger=none", f"target={ROOT / 'advaudit/demo/checkpoints/control.pt'}"]


def examination() -> Any:
    """The examination's prepared state (world, instances, condition space, judge)."""
    import advaudit.registry  # noqa: F401  (registers the schemas)
    from hydra import compose, initialize_config_dir

    out = Path(tempfile.mkdtemp(prefix="render_classes_"))
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("examine", [*OVERRIDES, f"paths.output_dir={out}", f"paths.root_dir={out}"])
    return prepare(cfg)


def variants(judge: Any, per: list[str], baseline: str | None) -> dict[str, Callable[[Any, torch.Tensor], Any]]:
    """``{name: render_geometric}``: the size rule's choice (auto), each of ``per`` forced (``all``: one call,
    ``class``: one call per class, a number: that many scenes per call), and the baseline revision's world
    under the same judge."""

    def forced(value: str) -> Callable[[Any, torch.Tensor], Any]:
        def render(z: Any, s: torch.Tensor) -> Any:
            rule = world_module.scenes_per_call
            if value != "auto":
                world_module.scenes_per_call = lambda size: (
                    len(s) * s.shape[1] if value == "all" else 0 if value == "class" else int(value))
            try:
                return judge.render_geometric(z, s)
            finally:
                world_module.scenes_per_call = rule
        return render

    out = {name: forced(name) for name in ["auto", *per]}
    if baseline:
        old, world = copy.copy(judge), package_module_at_revision("advaudit.worlds.shapes.world", baseline).ShapeWorld
        old.world = world.__new__(world)                       # the same settings, the revision's code
        old.world.__dict__.update(judge.world.__dict__)
        out[baseline] = old.render_geometric
    return out


def timed(runs: dict[str, Callable], z: Any, s: torch.Tensor, repeats: int) -> dict[str, float]:
    """The least CPU milliseconds (process time, one thread) per call of each run over ``repeats`` (the runs
    alternating within each repeat: the least is the one other processes disturbed least); checks that they
    all draw the same images and checks."""
    first = {name: run(z, s) for name, run in runs.items()}                     # warm-up and agreement
    images, checks = next(iter(first.values()))
    for name, (other, other_checks) in first.items():
        assert torch.equal(other, images) and all(torch.equal(other_checks[k], checks[k]) for k in checks), name
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.process_time()
            run(z, s)
            times[name].append(time.process_time() - start)
    return {name: 1e3 * min(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default=None, help="git revision of ShapeWorld to time as well (same run)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--q", type=int, default=16)
    parser.add_argument("--shards", default="8,4,2,1", help="instances per call: 80 / each")
    parser.add_argument("--sizes", default="32", help="image sizes (the examination's is 32)")
    parser.add_argument("--per", default="all,class", help="scenes per renderer call to time besides the rule's")
    parser.add_argument("--memory", default="keep", choices=MEMORY_CHOICES, help="as examine.py's memory= (default keep)")
    args = parser.parse_args()
    kept = configure_memory(args.memory)
    ex = examination()
    threads = configure_threads(1)
    u = torch.rand(len(ex.z), args.q, len(ex.space.free), generator=torch.Generator().manual_seed(0))
    s = ex.space.assemble(u)
    print(f"render_geometric, CPU ms per call (least of {args.repeats}), {threads} thread, shadows {ex.world.shadows}, "
          f"memory={args.memory} (kept: {kept})")
    for size in (int(x) for x in args.sizes.split(",")):
        judge = copy.copy(ex.judge)
        judge.world = ex.world if size == ex.world.image_size else ex.world.with_image_size(size)
        runs = variants(judge, args.per.split(","), args.baseline)
        print(f"| px | instances x q | classes | {' | '.join(runs)} | auto / {args.baseline or 'class'} |\n|"
              + "---|" * (len(runs) + 4))
        for shards in (int(x) for x in args.shards.split(",")):
            rows = shard_rows(len(ex.z), 0, shards)
            z = ex.z.subset(rows.to(ex.z.labels.device))
            ms = timed(runs, z, s[rows], args.repeats)
            print(f"| {size} | {len(rows)} x {args.q} | {len(z.labels.unique())} | "
                  + " | ".join(f"{v:.1f}" for v in ms.values())
                  + f" | {ms['auto'] / ms[args.baseline or 'class']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
