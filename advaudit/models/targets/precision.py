"""Where and in which precision a target runs its inference: device, autocast dtype, memory layout.

Every audit asks a torch target for probabilities through :meth:`TorchTarget.predict_proba`, which runs
each batch under :func:`inference` (``torch.inference_mode`` plus the target's autocast, if any). The
settings come from the examine config's ``device`` and ``precision`` keys:

- ``precision=32`` (default): float32, as trained.
- ``precision=bf16``: bfloat16 autocast, on the CPU and on a GPU.
- ``precision=16``: float16 autocast, on a GPU only (CPU float16 convolutions are not what anyone
  deploys, and are slow): refused on the CPU in one line.

Probabilities are always returned in float32 (the softmax runs on float32 logits). Gradient paths
(the fault tests' walk, the adversarial-distance attack) call ``logits`` directly and stay in float32.
On a GPU, a target that takes images has its weights stored channels-last (NHWC), the layout tensor
cores want under autocast; on the CPU the loader already does that (:meth:`TorchTarget.use_channels_last`).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch

from advaudit.errors import require

#: ``precision`` value -> autocast dtype (``None``: no autocast, float32)
PRECISIONS: dict[str, torch.dtype | None] = {"32": None, "bf16": torch.bfloat16, "16": torch.float16}


def device_problem(device: str | None, precision: Any = "32") -> str | None:
    """The one-line problem with ``device`` and ``precision`` on this machine, or None when they work."""
    name = "auto" if device is None else str(device)
    wants_cuda = name.startswith("cuda")
    if wants_cuda and not torch.cuda.is_available():
        return (f"device={name} but torch sees no CUDA GPU here (torch {torch.__version__}, CUDA build "
                f"{torch.version.cuda or 'none'}); use device=cpu, or device=auto to take a GPU when there is one")
    if wants_cuda and ":" in name and int(name.split(":", 1)[1] or 0) >= torch.cuda.device_count():
        return f"device={name} but this machine has {torch.cuda.device_count()} GPU(s); use device=cuda:0"
    runs_on_cpu = name == "cpu" or (name == "auto" and not torch.cuda.is_available())
    if str(precision) == "16" and runs_on_cpu:
        return ("precision=16 (float16 autocast) runs only on a CUDA GPU, and this audit runs on the CPU; "
                "use precision=bf16 (bfloat16 autocast) or precision=32")
    return None


def autocast_dtype(precision: Any) -> torch.dtype | None:
    """The autocast dtype of ``precision`` (``32``, ``bf16`` or ``16``; None for float32)."""
    key = str(precision)
    require(key in PRECISIONS, f"precision={precision}; use 32, bf16 or 16")
    return PRECISIONS[key]


def configure_target(target: Any, precision: Any = "32") -> Any:
    """Set ``target``'s inference precision and, on a GPU, its channels-last layout; returns ``target``.

    Raises:
        AdvauditError: a reduced precision for a target that is not a torch module (ONNX, scikit-learn,
            a prediction function), or ``precision=16`` on the CPU.
    """
    dtype = autocast_dtype(precision)
    is_torch = isinstance(target, torch.nn.Module)
    require(dtype is None or is_torch, f"precision={precision} needs a torch target, and this one is a black box "
            f"({type(target).__name__}: ONNX, scikit-learn or a prediction function); use precision=32")
    if not is_torch:
        return target
    problem = device_problem(str(target.device.type), precision)
    require(problem is None, problem or "")
    target.autocast_dtype = dtype
    if target.device.type == "cuda" and len(getattr(target, "input_shape", ())) == 3:
        try:
            target.net.to(memory_format=torch.channels_last)
        except (RuntimeError, TypeError, NotImplementedError):
            pass  # a scripted or exported module keeps its layout
    return target


@contextmanager
def inference(device: torch.device, dtype: torch.dtype | None) -> Iterator[None]:
    """``torch.inference_mode`` plus autocast to ``dtype`` on ``device``'s type (none when ``dtype`` is None).

    Tensors made inside are inference tensors: use them outside only in out-of-place operations
    (``torch.cat`` of the batches makes an ordinary tensor)."""
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
        yield
