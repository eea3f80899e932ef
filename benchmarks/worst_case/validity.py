"""Label preservation in ShapeWorld: how much of a factor box fails each validity check, and what
judging validity costs next to rendering alone (measured in one run, interleaved).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/worst_case/validity.py [--factors '{camera_distance: [1.5, 5]}'] [--min-extent 0.3]
"""

from __future__ import annotations

import argparse
import time

import torch
import yaml

from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.settings import ValidityConf
from advaudit.worlds.validity import ValidityJudge


def invalid_shares(size: int, factors: dict | None, min_extent: float, renders: int = 20) -> dict[str, object]:
    """Share of uniformly random conditions over the test instances failing each check."""
    world = ShapeWorld(image_size=size, factors=factors)
    z = world.instances("test")
    s = world.random_conditions(len(z), renders, torch.Generator().manual_seed(0))
    _, checks = world.render_checked(z, s, ValidityConf(min_extent=min_extent))
    distance = s.reshape(-1, s.shape[-1])[:, [f.name for f in world.factors].index("camera_distance")]
    out = ~checks["in_frame"]
    bands = {f"{lo:.1f}-{lo + 0.5:.1f} m": round(float(out[(distance >= lo) & (distance < lo + 0.5)].float().mean()), 3)
             for lo in (1.0, 1.5, 2.0, 3.0, 4.5) if ((distance >= lo) & (distance < lo + 0.5)).any()}
    return {"size": size, **{k: round(1 - float(v.float().mean()), 4) for k, v in checks.items()},
            "out_of_frame_by_camera_distance": bands}


def judging_overhead(size: int, repeats: int = 5) -> tuple[float, float]:
    """Renders/s of ``world.render`` and of ``ValidityJudge.render`` on the same 1,600 scenes (median)."""
    world = ShapeWorld(image_size=size)
    z = world.instances("test").subset(torch.arange(0, 100, 2))
    s = world.random_conditions(len(z), 32, torch.Generator().manual_seed(0))
    judge = ValidityJudge(world, ValidityConf())
    world.render(z, s), judge.render(z, s)
    plain, judged = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        world.render(z, s)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        judge.render(z, s)
        judged.append(time.perf_counter() - start)
    n = len(z) * s.shape[1]
    return n / sorted(plain)[repeats // 2], n / sorted(judged)[repeats // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default=None, help="factor overrides as YAML, e.g. '{camera_distance: [1.5, 5]}'")
    parser.add_argument("--min-extent", type=float, default=ValidityConf.min_extent,
                        help="the size check: share of the frame side the object must span")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    factors = yaml.safe_load(args.factors) if args.factors else None
    for size in (32, 64):
        print(invalid_shares(size, factors, args.min_extent))
    plain, judged = judging_overhead(32)
    print(f"32 px: render {plain:.0f}/s, render + validity {judged:.0f}/s ({judged / plain - 1:+.1%})")


if __name__ == "__main__":
    main()
