"""Geometric validity of ShapeWorld conditions by camera distance: the figures behind the default
bounds (advaudit/worlds/shapes/world.py, DEFAULT_FACTORS) and docs/results/worst_case/worst-case.md.

Renders every val instance under uniformly random conditions of the paper's Table-1 box
(camera distance 1-5 m) and, per camera-distance bin, reports the share of renders whose object
mask touches the frame border (overflows the frame), is empty, or is under ``--min-height`` px
tall (its larger bounding-box side); then the same shares for the whole default box and for the
Table-1 box. A condition is geometrically valid when the object is fully in frame and tall enough.
With ``--target``: that target's accuracy on the held-out *test* instances under random conditions
of the default box, on all renders and on the geometrically valid ones.

    .venv/bin/python benchmarks/worst_case/shapes_default_bounds.py [--renders 60] [--image-size 32] [--min-height 6]
        [--target <target.pt>]
"""

from __future__ import annotations

import argparse

import torch

from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.shapes.world import TABLE1_FACTORS
from advaudit.worlds.validity import mask_checks as validity_mask_checks


def mask_checks(masks: torch.Tensor, min_height: int) -> dict[str, torch.Tensor]:
    """``masks`` ``[M, H, W]`` bool -> per render: ``border``, ``empty``, ``small`` ``[M]`` bool
    (the audit's own checks, :func:`advaudit.worlds.validity.mask_checks`, plus empty renders)."""
    checks = validity_mask_checks(masks, min_height / masks.shape[-1])
    return {"border": ~checks["in_frame"], "empty": ~masks.flatten(1).any(1), "small": ~checks["min_extent"]}


def measure(world: ShapeWorld, renders: int, min_height: int, seed: int,
            split: str = "val") -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    z = world.instances(split)
    s = world.random_conditions(len(z), renders, torch.Generator().manual_seed(seed))
    checks = mask_checks(world.render_masks(z, s), min_height)
    distance = s.reshape(-1, s.shape[-1])[:, [f.name for f in world.factors].index("camera_distance")]
    return distance, checks


def target_accuracy(path: str, world: ShapeWorld, renders: int, min_height: int, seed: int) -> dict[str, float]:
    """Accuracy of the target at ``path`` on the test instances under random default conditions."""
    from advaudit.models import load_target

    target = load_target(path)
    z = world.instances("test")
    s = world.random_conditions(len(z), renders, torch.Generator().manual_seed(seed))
    checks = mask_checks(world.render_masks(z, s), min_height)
    valid = ~(checks["border"] | checks["empty"] | checks["small"])
    predicted = target.predict_proba(world.render(z, s), calibrated=False).argmax(1).cpu()
    correct = predicted == z.labels.cpu().repeat_interleave(renders)
    return {"all": float(correct.float().mean()), "valid": float(correct[valid].float().mean()),
            "renders": int(len(correct)), "valid_share": float(valid.float().mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--renders", type=int, default=60, help="random conditions per val instance")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--min-height", type=int, default=6)
    parser.add_argument("--target", default=None, help="also report this ShapeWorld target's test accuracy")
    args = parser.parse_args()
    torch.set_num_threads(1)
    table1 = ShapeWorld(image_size=args.image_size, factors={f.name: [f.low, f.high] for f in TABLE1_FACTORS})
    distance, checks = measure(table1, args.renders, args.min_height, seed=0)
    print(f"{args.image_size} px, {len(distance)} renders ({args.renders} per val instance), Table-1 box\n")
    print(f"| camera distance (m) | renders | overflows the frame | under {args.min_height} px | empty |")
    print("|---|---|---|---|---|")
    edges = [1.0, 1.2, 1.4, 1.5, 1.6, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0]
    for low, high in zip(edges[:-1], edges[1:]):
        sel = (distance >= low) & (distance < high)
        print(f"| [{low:g}, {high:g}) | {int(sel.sum())} | {checks['border'][sel].float().mean():.3f} | "
              f"{checks['small'][sel].float().mean():.3f} | {checks['empty'][sel].float().mean():.3f} |")
    default = ShapeWorld(image_size=args.image_size)
    print("\n| box | camera distance | geometrically valid share |\n|---|---|---|")
    for name, world, seed in (("Table 1", table1, 0), ("default", default, 1)):
        _, c = measure(world, args.renders, args.min_height, seed)
        valid = ~(c["border"] | c["empty"] | c["small"])
        bounds = next((f.low, f.high) for f in world.factors if f.name == "camera_distance")
        print(f"| {name} | [{bounds[0]:g}, {bounds[1]:g}] | {valid.float().mean():.4f} |")
    if args.target:
        acc = target_accuracy(args.target, default, args.renders, args.min_height, seed=2)
        print(f"\n{args.target}: test-instance accuracy under random default conditions {acc['all']:.4f} "
              f"({acc['renders']} renders), on the geometrically valid ones {acc['valid']:.4f} "
              f"(valid share {acc['valid_share']:.4f})")


if __name__ == "__main__":
    main()
