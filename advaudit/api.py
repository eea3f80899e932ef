"""Score a batch from Python: :func:`load_target`, the loader every audit uses, as a public function.

    import advaudit
    target = advaudit.load_target("team/resnet18_fmnist.pt")            # a target file, or
    target = advaudit.load_target("my_conf/resnet_fmnist.yaml")          # the YAML `advaudit import` takes, or
    target = advaudit.load_target({"path": "model.onnx", "class_names": [...], "input_shape": [13],
                                   "normalization": "model"})            # a target block
    probs = target.predict_proba(x)      # raw inputs [B, *target.input_shape] -> [B, len(target.class_names)]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import advaudit.registry  # noqa: F401  (registers the dataset schemas a block's `dataset: <name>` composes from)
from advaudit.errors import require
from advaudit.models.imported.command import parse_block
from advaudit.models.io import load_any_target
from advaudit.runtime import resolve_device

#: file endings read as a YAML file holding a target block (as for ``advaudit import``)
BLOCK_FILES = (".yaml", ".yml", ".json")


def load_target(target: str | Path | Mapping[str, Any], device: str = "cpu", seed: int = 0) -> Any:
    """The target a path or block names, checked and ready to score, as every audit loads it.

    Args:
        target: an advaudit target file (``train.py``'s ``target.pt`` or ``advaudit import``'s output);
            a YAML file holding a target block (at its top level or under ``target:``); or the block
            itself as a mapping (docs/imported-models.md lists its keys).
        device: ``cpu``, ``cuda``, ``cuda:1`` or ``auto``.
        seed: the seed a dataset named in the block is built with (``temperature: calibrate``).

    Returns:
        A target with ``predict_proba(x)``: raw inputs ``[B, *input_shape]`` (images in ``[0, 1]`` as the
        data gives them, tables in the data's units; resizing and normalisation are the target's) ->
        probabilities ``[B, K]`` over ``class_names`` (temperature applied; ``calibrated=False`` for
        ``T = 1``); ``logits(x)`` ``[B, K]``; ``class_names``; ``input_shape``; ``meta`` (plain data).

    Raises:
        AdvauditError: one line naming what is wrong with the file or block and the fix.
    """
    if isinstance(target, (str, Path)) and Path(target).suffix.lower() in BLOCK_FILES:
        target = parse_block(str(target), [])
    require(isinstance(target, (str, Path, Mapping)), f"load_target takes a path or a target block (a mapping), "
            f"not a {type(target).__name__}")
    return load_any_target(dict(target) if isinstance(target, Mapping) else str(target),
                           device=str(resolve_device(device)), seed=seed)
