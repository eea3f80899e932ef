"""Is a ``torch.export`` archive exported with a fixed batch audited as fast as its state_dict?

One network (torchvision's ResNet-18 with a one-channel stem, 10 classes, random weights: speed does
not depend on them) is given as a target block naming its builder with a ``state_dict`` file, and
as a ``torch.export`` archive exported with a fixed batch of ``--batch`` inputs, run three ways:
as advaudit loads it (its graph re-exported with a dynamic batch), as advaudit runs a graph whose
ops need the exported batch (all chunks in one ``vmap`` call), and chunk by chunk (how advaudit
ran every such archive before, and still runs a graph ``vmap`` cannot). Each scores the same
``--items`` Fashion-MNIST-shaped inputs ``[1, 28, 28]`` with ``predict_proba`` (the audits' call);
rounds are interleaved so all forms see the same machine load, and the table gives medians.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/models/fixed_batch_export.py [--items 1000] [--batch 8] [--repeats 3]
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

from advaudit.models.targets.formats.export import FixedBatch  # noqa: E402
from advaudit.models import load_target  # noqa: E402
from advaudit.runtime import configure_threads  # noqa: E402

NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]
BUILDER = "benchmarks.fixed_batch_export.resnet18_grey"


def resnet18_grey(num_classes: int = 10) -> torch.nn.Module:
    """torchvision's ResNet-18 with a one-channel stem (a modified architecture, as a function)."""
    import torchvision  # only this benchmark's network needs it

    net = torchvision.models.resnet18(num_classes=num_classes)
    net.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return net


def make_forms(root: Path, batch: int) -> dict[str, object]:
    """``{form: target}``: the state_dict block and the fixed-batch archive run three ways."""
    torch.manual_seed(0)
    net = resnet18_grey().eval()
    torch.save(net.state_dict(), root / "net.pt")
    program = torch.export.export(net, (torch.rand(batch, 1, 28, 28),))
    torch.export.save(program, root / "net_fixed.pt2")
    common = {"class_names": NAMES, "input_shape": [1, 28, 28], "normalization": "model"}
    forms: dict[str, object] = {
        "state_dict block": load_target({"model": {"_target_": BUILDER}, "path": str(root / "net.pt"), **common}),
        f"torch.export, batch {batch}, as loaded (re-exported, dynamic batch)":
            load_target({"path": str(root / "net_fixed.pt2"), **common})}
    assert not isinstance(forms[next(reversed(forms))].net.model, FixedBatch), "re-export failed"
    for name, batched in (("all chunks in one vmap call", True), ("chunk by chunk (before)", False)):
        target = load_target({"path": str(root / "net_fixed.pt2"), **common})
        target.net.model = FixedBatch(program.module(), [batch, 1, 28, 28])
        assert target.net.model.batched, "vmap does not run this program"
        target.net.model.batched = batched
        forms[f"torch.export, batch {batch}, {name}"] = target
    return forms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    configure_threads(args.threads)
    x = torch.rand(args.items, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    with tempfile.TemporaryDirectory() as tmp:
        forms = make_forms(Path(tmp), args.batch)
        reference = forms["state_dict block"].predict_proba(x)
        seconds: dict[str, list[float]] = {name: [] for name in forms}
        gaps = {}
        for _ in range(args.repeats):
            for name, target in forms.items():
                start = time.perf_counter()
                probs = target.predict_proba(x)
                seconds[name].append(time.perf_counter() - start)
                gaps[name] = float((probs - reference).abs().max())
    base = statistics.median(seconds["state_dict block"])
    print(f"{args.items} inputs [1, 28, 28], {torch.get_num_threads()} torch thread(s), median of {args.repeats}")
    print("| form | seconds | ratio to state_dict | max prob. difference |\n|---|---|---|---|")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {median / base:.2f} | {gaps[name]:.1e} |")


if __name__ == "__main__":
    main()
