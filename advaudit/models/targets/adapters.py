"""Between the audit's inputs and the user's model: resizing, normalisation, outputs and class maps.

The audit feeds raw inputs ``[B, *audit_shape]`` in ``[0, 1]`` (images) or the data's units (tables).
:class:`InputAdapter` resizes images to the model's input shape when the user asked for it
(``target.resize_from``; bilinear with antialiasing, a grey channel repeated to the model's count)
and applies the model's normalisation. :func:`as_log_scores` turns whatever the model returns
(a tensor, Hugging Face's ``ImageClassifierOutput``, a dict or tuple) into ``[B, M]`` scores, and
:class:`ClassMap` sums the probabilities of several model outputs into one audit class
(an ImageNet model's chair classes onto a world's ``chair``), with every output outside the map
summed into :data:`~advaudit.models.targets.classes.OTHER_CLASS`.
"""

from __future__ import annotations

import difflib
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from advaudit.errors import AdvauditError, require


def channels_of(shape: list[int] | tuple[int, ...]) -> int:
    """Channels of an image shape ``[C, H, W]``, features of a table shape ``[F]``."""
    return int(shape[0]) if len(shape) == 3 else int(shape[-1])


class InputAdapter(nn.Module):
    """Raw ``[B, *audit_shape]`` -> normalised ``[B, *model_shape]``.

    Args:
        model_shape: what the model takes (``[C, H, W]`` or ``[F]``).
        resize_from: the audit's image shape ``[C', H', W']`` when the user asked for resizing, else None.
        normalization: ``{"mean": [...], "std": [...]}`` per model channel/feature, or ``"model"`` (none here).
    """

    def __init__(self, model_shape: Sequence[int], resize_from: Sequence[int] | None, normalization: Any) -> None:
        super().__init__()
        self.model_shape = tuple(int(d) for d in model_shape)
        self.resize_from = tuple(int(d) for d in resize_from) if resize_from is not None else None
        channels = channels_of(self.model_shape)
        view = (1, -1, 1, 1) if len(self.model_shape) == 3 else (1, -1)
        norm = normalization if isinstance(normalization, dict) else {"mean": 0.0, "std": 1.0}
        mean, std = (torch.as_tensor(norm[k], dtype=torch.float32).flatten() for k in ("mean", "std"))
        self.register_buffer("mean", mean.expand(channels).clone().view(view))
        self.register_buffer("std", std.expand(channels).clone().view(view))

    def forward(self, x: Tensor) -> Tensor:
        if self.resize_from is not None:
            channels, height, width = self.model_shape
            if x.shape[1] != channels:
                x = x.expand(-1, channels, -1, -1)
            if tuple(x.shape[2:]) != (height, width):
                x = F.interpolate(x, size=(height, width), mode="bilinear", align_corners=False, antialias=True)
        return (x - self.mean).div_(self.std)  # in place on the fresh difference: one image-sized allocation


def as_scores(output: Any) -> Tensor:
    """The ``[B, M]`` score tensor in whatever a model returned (tensor, ``.logits``, dict, tuple)."""
    if isinstance(output, Tensor):
        return output
    if hasattr(output, "logits") and isinstance(output.logits, Tensor):
        return output.logits
    if isinstance(output, dict):
        for key in ("logits", "probabilities", "output"):
            if isinstance(output.get(key), Tensor):
                return output[key]
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], Tensor):
        return output[0]
    raise AdvauditError(f"the model returned a {type(output).__name__}, not scores; it must return a [B, classes] "
                        "tensor (or an object with .logits)")


def as_log_scores(scores: Tensor, outputs: str) -> Tensor:
    """``[B, M]`` scores the softmax of which gives the model's probabilities.

    ``logits`` are returned as they are; ``probabilities`` as their logarithm (floored at 1e-30);
    ``log_probabilities`` as they are.
    """
    if outputs == "probabilities":
        return scores.clamp_min(1e-30).log()
    return scores


def audit_scores(scores: Tensor, outputs: str, class_map: "ClassMap | None") -> Tensor:
    """The model's ``[B, M]`` scores -> ``[B, K]`` audit-class scores whose softmax is the target's probabilities.

    Without a class map: :func:`as_log_scores` (logits stay logits); with one, the model's
    log-probabilities summed into the audit classes by :class:`ClassMap`.
    """
    if class_map is None:
        return as_log_scores(scores, outputs)
    return class_map(torch.log_softmax(scores, 1) if outputs == "logits" else as_log_scores(scores, outputs))


class ClassMap(nn.Module):
    """Model scores ``[B, M]`` -> audit-class log-probabilities ``[B, K + 1]``.

    ``p_k = sum_{j in map[k]} softmax(scores)_j``; the last column, the other class, is
    ``1 - sum_k p_k`` (every output outside the map). Outputs may be named by index or by
    ``output_names``; one output may feed one audit class only.
    """

    def __init__(self, class_map: dict[str, list[Any]], n_outputs: int, output_names: Sequence[str] | None) -> None:
        super().__init__()
        names = list(output_names) if output_names is not None else None
        require(names is None or len(names) == n_outputs, f"target.output_names has {len(names or [])} names but "
                f"the model has {n_outputs} outputs")
        membership = torch.zeros(n_outputs, len(class_map) + 1)
        for column, (audit_class, outputs) in enumerate(class_map.items()):
            for output in outputs:
                index = _output_index(output, names, n_outputs, audit_class)
                require(membership[index].sum() == 0, f"target.class_map sends model output {output!r} to two "
                        "audit classes; each output may feed one")
                membership[index, column] = 1.0
        membership[:, -1] = 1.0 - membership[:, :-1].sum(1)
        self.register_buffer("membership", membership)

    def forward(self, log_scores: Tensor) -> Tensor:
        probabilities = torch.softmax(log_scores, dim=1) @ self.membership
        return probabilities.clamp_min(1e-30).log()


def _output_index(output: Any, names: list[str] | None, n_outputs: int, audit_class: str) -> int:
    if isinstance(output, int) and not isinstance(output, bool):
        require(0 <= output < n_outputs, f"target.class_map[{audit_class}] names output {output}; the model has "
                f"outputs 0..{n_outputs - 1}")
        return output
    require(names is not None, f"target.class_map[{audit_class}] names output {output!r}: give target.output_names "
            "(the model's class names, in output order) or use indices")
    if str(output) not in names:
        close = difflib.get_close_matches(str(output), names, n=1)
        raise AdvauditError(f"target.class_map[{audit_class}] names {output!r}, which is not in target.output_names"
                            + (f"; did you mean {close[0]!r}?" if close else ""))
    return names.index(str(output))
