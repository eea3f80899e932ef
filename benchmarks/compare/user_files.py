"""What the user-recipe benchmarks share: Fashion-MNIST read as a user would, and one trained CNN saved as a user
brings it to advaudit (a plain state_dict, its target block as an experiment file, its test accuracy).

Imported by ``rotation_pair.py`` and ``user_recipes.py`` (run with ``PYTHONPATH=.`` from the repository root).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from advaudit.data.fashion_mnist import CLASS_NAMES, DEFAULT_ROOT, read_idx


def fashion_mnist(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``[N, 1, 28, 28]`` in [0, 1] and labels ``[N]`` read as a user would, straight from the idx files."""
    prefix = "train" if split == "train" else "t10k"
    x = torch.tensor(read_idx(Path(DEFAULT_ROOT) / f"{prefix}-images-idx3-ubyte.gz"), dtype=torch.float32) / 255
    y = torch.tensor(read_idx(Path(DEFAULT_ROOT) / f"{prefix}-labels-idx1-ubyte.gz"), dtype=torch.long)
    return x.unsqueeze(1), y


def fit(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, augment: Callable[[torch.Tensor], torch.Tensor] | None,
        epochs: int, lr: float) -> torch.nn.Module:
    """Plain PyTorch as a user trains: Adam at ``lr``, batch 128, ``epochs`` shuffled passes over ``x`` ``[N, 1, 28,
    28]`` / ``y`` ``[N]``, each batch through ``augment`` (drawn per image) when given; returns ``model`` in eval
    mode."""
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for start in range(0, len(x), 128):
            index = order[start:start + 128]
            batch = x[index] if augment is None else augment(x[index])
            loss = F.cross_entropy(model(batch), y[index])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return model.eval()


def target_block(model_class: str, weights: Path, width: int, name: str) -> dict[str, Any]:
    """The target block a user writes for one file of ``tests.models.user_models.<model_class>`` (``name``: the
    checkpoint's or the recipe's)."""
    return {"target": {"model": {"_target_": f"tests.models.user_models.{model_class}", "classes": 10, "width": width},
                       "path": str(weights.resolve()), "class_names": CLASS_NAMES, "input_shape": [1, 28, 28],
                       "normalization": "model", "name": name, "dataset": "fashion_mnist"}}


def save_user_file(model: torch.nn.Module, out: Path, name: str, seed: int, width: int,
                   test: tuple[torch.Tensor, torch.Tensor], record: dict[str, Any], started: float) -> None:
    """Save ``model`` as ``<out>/<name>_s<seed>/weights.pt``, its target block (:func:`target_block`, named
    ``name``: the recipe, so that a recipe's files compare as one) as ``<out>/conf/experiment/<name>_s<seed>.yaml``
    and ``accuracy.json`` (its accuracy on ``test`` ``([N, 1, 28, 28], [N])`` with ``record`` and the seconds since
    ``started``); prints one line."""
    folder = out / f"{name}_s{seed}"
    with torch.no_grad():
        accuracy = float((model(test[0]).argmax(1) == test[1]).float().mean())
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / "weights.pt")
    experiment = out / "conf" / "experiment" / f"{name}_s{seed}.yaml"   # examine.py --config-dir <out>/conf
    experiment.parent.mkdir(parents=True, exist_ok=True)
    block = target_block(type(model).__name__, folder / "weights.pt", width, name)
    experiment.write_text("# @package _global_\n" + json.dumps(block, indent=1))   # JSON is YAML
    seconds = time.perf_counter() - started
    (folder / "accuracy.json").write_text(json.dumps({"test_accuracy": accuracy, "seed": seed, **record,
                                                      "seconds": seconds}))
    print(f"{name} seed {seed}: test accuracy {accuracy:.3f} ({seconds:.0f} s)", flush=True)
