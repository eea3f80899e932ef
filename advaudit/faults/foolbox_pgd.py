"""The pixel baseline through foolbox 3's PGD, with the confident margin loss of the fault tests.

foolbox's ``L2PGD`` / ``LinfPGD`` minimise cross-entropy towards the target class; here
``get_loss_fn`` is overridden with the same margin ``max_{y != y1} f_y - f_{y1} + kappa`` that the
generator walk uses, so both kinds of test chase the same confident mistake. foolbox runs every
step for every image (no early stop), so its tests sit deeper past the margin than those of
:func:`advaudit.faults.search.pixel_tests`; success is judged on the final image.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch
from torch import Tensor

from advaudit.errors import require
from advaudit.faults.search import FaultResult, margin_loss


def _margin_pgd(base: type, kappa: float, source: Tensor | None) -> Any:
    """A subclass of foolbox attack ``base`` whose loss is the confident margin on the logits."""
    import eagerpy as ep  # foolbox: only the foolbox attacks need it

    class MarginPGD(base):  # type: ignore[misc, valid-type]
        def get_loss_fn(self, model: Callable, labels: Any) -> Callable:
            def loss_fn(inputs: Any) -> Any:
                logits = model(inputs).raw
                classes = labels.raw
                if source is None:  # targeted: foolbox descends on the loss
                    return ep.astensor(margin_loss(logits, classes, classes, kappa).sum())
                # untargeted: foolbox ascends on the loss, so hand it the negated margin
                return ep.astensor(-margin_loss(logits, classes, None, kappa).sum())
            return loss_fn

    return MarginPGD


def foolbox_pixel_tests(model: torch.nn.Module, x: Tensor, y0: Tensor, y1: Tensor | None, eps: float,
                        norm: str = "l2", kappa: float = 1.0, steps: int = 100) -> FaultResult:
    """foolbox PGD on ``x`` ``[B, C, H, W]`` in [0, 1] towards ``y1`` ``[B]`` (None: away from ``y0``).

    ``model`` maps images to logits ``[B, K]`` (a :class:`~advaudit.models.targets.target.TorchTarget` does).
    """
    import foolbox as fb  # foolbox: only the foolbox attacks need it

    require(eps > 0, f"pixel baseline eps={eps} must be > 0")
    require(norm in ("l2", "linf"), f"pixel baseline norm={norm!r}; use l2 or linf")
    start = time.perf_counter()
    base = fb.attacks.L2PGD if norm == "l2" else fb.attacks.LinfPGD
    attack = _margin_pgd(base, kappa, None if y1 is not None else y0)(steps=steps, random_start=False)
    fmodel = fb.PyTorchModel(model.eval(), bounds=(0.0, 1.0))
    criterion = fb.criteria.TargetedMisclassification(y1) if y1 is not None else fb.criteria.Misclassification(y0)
    tests = attack.run(fmodel, x, criterion, epsilon=eps).detach()
    with torch.no_grad():
        logits = model(tests)
    success = margin_loss(logits, y0, y1, kappa) < 0
    taken = torch.full((len(x),), steps, dtype=torch.long, device=x.device)
    return FaultResult(tests, success, taken, logits.argmax(1), time.perf_counter() - start,
                       (tests - x).flatten(1).norm(dim=1))
