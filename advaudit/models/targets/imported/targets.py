"""Targets around models trained elsewhere, with the interface every audit already uses.

:class:`ImportedTorchTarget` is a :class:`~advaudit.models.targets.target.TorchTarget` whose ``net`` is the
whole path from the audit's raw input to audit-class scores (input adapter, the user's module, class
map), so gradient audits, attacks, channels-last storage and BatchNorm folding apply unchanged.
:class:`BlackBoxTarget` serves ONNX sessions, scikit-learn estimators and prediction functions:
probabilities only, no gradients (GAD, random search, BO, RL and the evaluate audit need no more).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor, nn

from advaudit.errors import check_finite
from advaudit.models.targets.classes import OrderedOutputs, pick_columns
from advaudit.models.targets.adapters import ClassMap, InputAdapter, as_scores, audit_scores
from advaudit.models.targets.adapters import channels_of
from advaudit.models.targets.target import TorchTarget


class ModelPipeline(nn.Module):
    """Raw audit input ``[B, *audit_shape]`` -> audit-class scores ``[B, K]`` through the user's ``model``."""

    def __init__(self, adapter: InputAdapter, model: nn.Module, outputs: str, class_map: ClassMap | None) -> None:
        super().__init__()
        self.adapter, self.model, self.outputs, self.class_map = adapter, model, outputs, class_map

    def forward(self, x: Tensor) -> Tensor:
        return audit_scores(as_scores(self.model(self.adapter(x))), self.outputs, self.class_map)

    def train(self, mode: bool = True) -> "ModelPipeline":
        """Set the mode of every part that supports it (an exported program's module keeps its own)."""
        self.training = mode
        for child in (self.adapter, self.class_map, self.model):
            if child is None:
                continue
            try:
                child.train(mode)
            except (NotImplementedError, RuntimeError):
                pass  # torch.export's module: frozen in the mode it was exported in (eval)
        return self


class ImportedTorchTarget(TorchTarget):
    """A torch module trained elsewhere, audited on raw inputs ``[B, *audit_shape]``.

    Args:
        pipeline: the :class:`ModelPipeline` (adapter, the user's module, class map).
        meta: plain data; ``input_shape`` is what the audit feeds, ``model_input_shape`` what the model takes.
        temperature: applied to the audit-class scores by :meth:`predict_proba`.
    """

    def __init__(self, pipeline: ModelPipeline, meta: dict[str, Any], temperature: float = 1.0) -> None:
        channels = channels_of(meta["input_shape"])
        identity = {"mean": [0.0] * channels, "std": [1.0] * channels}
        super().__init__(pipeline, {**meta, "normalization": identity}, temperature)
        self.meta = dict(meta)

    def logits(self, x: Tensor) -> Tensor:
        """Raw input ``[B, *input_shape]`` -> audit-class scores ``[B, K]``: the pipeline normalises (this
        target's own normalisation is the identity, so it is skipped: the same numbers, two image-sized
        operations fewer)."""
        return self.net(x)

    def use_channels_last(self) -> "ImportedTorchTarget":
        """Channels-last weights where the user's module accepts it (a scripted module keeps its layout)."""
        pipeline = self.net.net if isinstance(self.net, OrderedOutputs) else self.net
        if len(self.meta["model_input_shape"]) == 3 and self.device.type == "cpu":
            try:
                pipeline.model.to(memory_format=torch.channels_last)
            except (RuntimeError, TypeError, NotImplementedError):
                pass
        return self


class BlackBoxTarget:
    """A model that only gives scores: ONNX, scikit-learn, a prediction function.

    Args:
        predict: ``[B, *model_shape]`` (numpy or torch, per ``array``) -> ``[B, M]`` scores.
        adapter: resizing and normalisation, as for torch targets.
        outputs: what ``predict`` returns: ``logits``, ``probabilities`` or ``log_probabilities``.
        class_map: optional; maps the ``M`` outputs onto audit classes.
        meta: plain data as for :class:`ImportedTorchTarget`.
    """

    def __init__(self, predict: Callable[[Any], Any], adapter: InputAdapter, outputs: str,
                 class_map: ClassMap | None, meta: dict[str, Any], temperature: float = 1.0, array: str = "numpy",
                 batch_size: int = 1024) -> None:
        self.predict, self.adapter, self.outputs, self.class_map = predict, adapter, outputs, class_map
        self.meta = dict(meta)
        self.array = array
        self.batch_size = int(batch_size)
        self.temperature = torch.tensor(float(temperature))

    class_names = TorchTarget.class_names
    num_classes = TorchTarget.num_classes
    input_shape = TorchTarget.input_shape
    check_input = TorchTarget.check_input
    device = torch.device("cpu")

    def logits(self, x: Tensor | np.ndarray) -> Tensor:
        """Audit-class scores ``[B, K]`` whose softmax is the model's (mapped) probabilities; no gradients."""
        x = torch.as_tensor(x, dtype=torch.float32).cpu()
        self.check_input(x)
        outs = []
        with torch.no_grad():
            for start in range(0, len(x), self.batch_size):
                model_input = self.adapter(x[start:start + self.batch_size]).contiguous()
                raw = self.predict(model_input.numpy() if self.array == "numpy" else model_input)
                scores = torch.as_tensor(np.asarray(raw) if not isinstance(raw, Tensor) else raw).float().cpu()
                outs.append(audit_scores(scores, self.outputs, self.class_map))
        return pick_columns(torch.cat(outs), self) if outs else torch.empty(0, self.num_classes)

    __call__ = logits

    def predict_proba(self, x: Tensor | np.ndarray, calibrated: bool = True, batch_size: int | None = None,
                      context: str | dict[str, Any] = "target") -> Tensor:
        """Class probabilities ``[B, K]``: ``softmax(scores / T)`` (``T = 1`` if not ``calibrated``)."""
        scores = self.logits(x)
        probs = torch.softmax(scores / (self.temperature if calibrated else 1.0), dim=1)
        check_finite(probs, context)
        return probs

    def eval(self) -> "BlackBoxTarget":
        return self

    def to(self, *args: Any, **kwargs: Any) -> "BlackBoxTarget":
        return self
