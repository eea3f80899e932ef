"""ShapeWorld's images and masks against ShapeWorld at another git revision, bit for bit: every packing of the
classes into renderer calls (the size rule's, one call, one call per class, nine scenes a call), every output
(image, mask, both), shadows on and off, 16-64 px, four class mixes, and batches whose classes come in blocks,
shuffled, or three scenes only (Table 1's whole box of conditions). Prints how many scene renders matched;
stops at the first that does not.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/worlds/render_identity.py --baseline 2430035
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from advaudit.runtime import configure_threads
from advaudit.worlds.shapes import ShapeWorld
from advaudit.worlds.shapes.world import TABLE1_FACTORS

sys.path[:0] = [str(p) for p in Path(__file__).resolve().parents[1].iterdir() if p.is_dir()]  # benchmarks/*/
from revision import package_module_at_revision  # noqa: E402  (benchmarks/ is on sys.path)

MIXES = (None, ["can", "barrel"], ["table", "chair", "mug"], ["cap"])


def compare(old_class: type, size: int, shadows: bool, classes: list[str] | None) -> int:
    """Scene renders compared for one world (all packings, outputs and batches); raises at a difference."""
    box = {f.name: [f.low, f.high] for f in TABLE1_FACTORS}
    kwargs = {"image_size": size, "shadows": shadows, "classes": classes, "factors": box,
              "instances_per_class": {"test": 6}}
    new, old = ShapeWorld(**kwargs), old_class(**kwargs)
    z = new.instances("test")
    g = torch.Generator().manual_seed(size + shadows)
    perm = torch.randperm(len(z), generator=g)
    checked = 0
    for name, zz in (("blocks", z), ("shuffled", z.subset(perm)), ("three", z.subset(perm[:3]))):
        s = new.random_conditions(len(zz), 8, g)
        want = old._render(zz, s, "both")
        for per in ("auto", 10 ** 6, 0, 9):
            for output in ("image", "mask", "both"):
                got = new._render(zz, s, output, per=per)
                got = got if output == "both" else (got, want[1]) if output == "image" else (want[0], got)
                assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), \
                    f"differs: {size} px, shadows {shadows}, classes {classes}, {name}, per={per}, {output}"
                checked += len(zz) * s.shape[1]
    return checked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", required=True, help="git revision of ShapeWorld to compare with")
    args = parser.parse_args()
    configure_threads(1)
    old_class = package_module_at_revision("advaudit.worlds.shapes.world", args.baseline).ShapeWorld
    checked = sum(compare(old_class, size, shadows, classes)
                  for size in (16, 32, 48, 64) for shadows in (True, False) for classes in MIXES)
    print(f"identical to {args.baseline}: {checked:,} scene renders (4 sizes x shadows on/off x {len(MIXES)} class "
          "mixes x 3 batches x 4 packings x 3 outputs)")


if __name__ == "__main__":
    main()
