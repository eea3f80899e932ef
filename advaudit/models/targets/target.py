"""Targets: the models under audit, on raw inputs, with their own normalisation and temperature.

A target carries everything needed to audit it alone (``meta``): class names, input shape,
normalisation and the architecture as plain data. Audits only ever see this interface.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from advaudit.errors import AdvauditError, check_finite
from advaudit.models.targets.classes import pick_columns
from advaudit.models.targets.precision import inference


class TorchTarget(nn.Module):
    """A torch classifier on raw inputs.

    Args:
        net: maps *normalised* input ``[B, *input_shape]`` to logits ``[B, K]``.
        meta: plain data with ``class_names``, ``input_shape``, ``normalization``
            (``{"mean": [...], "std": [...]}`` per channel or feature), ``arch``, ``arch_params``.
        temperature: calibration temperature applied by :meth:`predict_proba`.
    """

    #: autocast dtype of :meth:`predict_proba` (None: float32); set by :func:`advaudit.models.targets.precision.configure_target`
    autocast_dtype: torch.dtype | None = None

    def __init__(self, net: nn.Module, meta: dict[str, Any], temperature: float = 1.0) -> None:
        super().__init__()
        self.net = net
        self.meta = dict(meta)
        shape = tuple(int(d) for d in meta["input_shape"])
        view = (1, -1, 1, 1) if len(shape) == 3 else (1, -1)
        norm = meta["normalization"]
        self.register_buffer("mean", torch.tensor(norm["mean"], dtype=torch.float32).view(view))
        self.register_buffer("std", torch.tensor(norm["std"], dtype=torch.float32).view(view))
        self.register_buffer("temperature", torch.tensor(float(temperature)))

    # -- description ------------------------------------------------------------------------------
    @property
    def class_names(self) -> list[str]:
        return list(self.meta["class_names"])

    @property
    def num_classes(self) -> int:
        return len(self.meta["class_names"])

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.meta["input_shape"])

    @property
    def device(self) -> torch.device:
        return self.mean.device

    def use_channels_last(self) -> "TorchTarget":
        """Store the net's 4-D weights channels-last (NHWC) if it takes images on a CPU; returns ``self``.

        oneDNN's CPU convolutions run 1.4-2x faster with NHWC weights, forward and input gradients
        alike (docs/results/scale/performance.md); inputs may stay NCHW (the convolution
        converts them). Logits agree with the NCHW net to float rounding (~1e-6), not bit for bit.
        Tables and accelerators are left as they are (not measured there).
        """
        if len(self.input_shape) == 3 and self.device.type == "cpu":
            self.net.to(memory_format=torch.channels_last)
        return self

    def check_input(self, x: Tensor) -> None:
        """Raise :class:`AdvauditError` unless ``x`` is ``[B, *input_shape]``."""
        if tuple(x.shape[1:]) != self.input_shape:
            raise AdvauditError(
                f"input of shape {list(x.shape[1:])} does not fit the target, which takes "
                f"{list(self.input_shape)}; resize the data or audit a target trained at that size"
            )

    # -- prediction -------------------------------------------------------------------------------
    def logits(self, x: Tensor) -> Tensor:
        """Raw input ``[B, *input_shape]`` -> uncalibrated logits ``[B, K]`` (differentiable)."""
        return self.net((x - self.mean) / self.std)

    def forward(self, x: Tensor) -> Tensor:
        return self.logits(x)

    def predict_proba(self, x: Tensor, calibrated: bool = True, batch_size: int = 2048,
                      context: str | dict[str, Any] = "target") -> Tensor:
        """Class probabilities ``[B, K]`` on ``x``'s device: ``softmax(logits / T)`` (``T = 1`` if not ``calibrated``).

        Runs under ``torch.inference_mode`` in batches of ``batch_size``, with the autocast of the audit's
        ``precision`` (:mod:`advaudit.models.targets.precision`; probabilities are float32 either way); raises on
        non-finite outputs, naming ``context`` (see :func:`advaudit.errors.check_finite`: e.g. the step,
        instances and conditions).
        """
        self.check_input(x)
        temperature = self.temperature if calibrated else torch.ones_like(self.temperature)
        outs = []
        with inference(self.device, self.autocast_dtype):
            for start in range(0, len(x), batch_size):
                chunk = x[start:start + batch_size].to(self.device)
                outs.append(torch.softmax(self.logits(chunk).float() / temperature, dim=1))
        probs = torch.cat(outs) if outs else torch.empty(0, self.num_classes)  # outside: an ordinary tensor
        probs = probs.to(x.device)  # where the inputs are: CPU data indexes CPU tensors with these
        check_finite(probs, context)
        return probs


class SklearnTarget:
    """A scikit-learn classifier as a black-box target with the :class:`TorchTarget` interface.

    Args:
        estimator: fitted estimator with ``predict_proba`` (e.g. ``SVC(probability=True)``).
        meta: as for :class:`TorchTarget`; inputs are standardised with ``meta["normalization"]``.
    """

    def __init__(self, estimator: Any, meta: dict[str, Any]) -> None:
        if not hasattr(estimator, "predict_proba"):
            raise AdvauditError(f"{type(estimator).__name__} has no predict_proba; black-box targets "
                                "must give probabilities (e.g. SVC(probability=True))")
        self.estimator = estimator
        self.meta = dict(meta)
        norm = meta["normalization"]
        self._mean = np.asarray(norm["mean"], dtype=np.float64)
        self._std = np.asarray(norm["std"], dtype=np.float64)
        self.temperature = torch.tensor(1.0)

    class_names = TorchTarget.class_names
    num_classes = TorchTarget.num_classes
    input_shape = TorchTarget.input_shape
    check_input = TorchTarget.check_input
    device = torch.device("cpu")

    def predict_proba(self, x: Tensor | np.ndarray, calibrated: bool = True,
                      context: str | dict[str, Any] = "target") -> Tensor:
        """Class probabilities ``[B, K]`` (sklearn's own, e.g. Platt-scaled for SVMs)."""
        x = torch.as_tensor(x, dtype=torch.float32)
        self.check_input(x)
        z = (x.double().numpy() - self._mean) / self._std
        probs = pick_columns(torch.as_tensor(self.estimator.predict_proba(z), dtype=torch.float32), self)
        check_finite(probs, context)
        return probs

    def logits(self, x: Tensor | np.ndarray) -> Tensor:
        """Log-probabilities ``[B, K]`` (no gradients: this is a black box)."""
        return self.predict_proba(x).clamp_min(1e-12).log()

    __call__ = logits

    def eval(self) -> "SklearnTarget":
        return self

    def to(self, *args: Any, **kwargs: Any) -> "SklearnTarget":
        return self
