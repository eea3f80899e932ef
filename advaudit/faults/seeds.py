"""Seeds for fault tests: fresh (latent, class) pairs the target classifies as intended."""

from __future__ import annotations

import torch
from torch import Tensor

from advaudit.errors import AdvauditError
from advaudit.runtime import module_device


@torch.no_grad()
def sample_seeds(generator: torch.nn.Module, model: torch.nn.Module, source_class: int, n: int,
                 seed: int = 0, max_rounds: int = 20) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` seeds of class ``source_class`` whose unperturbed image ``model`` classifies as that class.

    Returns latents ``[n, latent]``, classes ``[n]`` and images ``[n, C, H, W]`` on the generator's
    device; samples ``n`` at a time for up to ``max_rounds`` rounds, then raises saying how many were
    tried and accepted. Latents are drawn on the CPU from ``seed`` and moved once, so a seed gives the
    same latents on every device.
    """
    device = module_device(generator)
    g = torch.Generator().manual_seed(seed)
    kept_z: list[Tensor] = []
    tried = accepted = 0
    for _ in range(max_rounds):
        z = generator.sample_latent(n, g).to(device)
        y = torch.full((n,), source_class, dtype=torch.long, device=device)
        ok = model(generator(z, y)).argmax(1) == source_class
        tried += n
        accepted += int(ok.sum())
        kept_z.append(z[ok])
        if accepted >= n:
            break
    if accepted < n:
        raise AdvauditError(f"the target classified only {accepted} of {tried} generated class-{source_class} seeds as "
                            f"class {source_class}; ask for fewer seeds (audit.n_seeds), check that generator and "
                            "target were trained on the same data, or train the generator longer")
    z = torch.cat(kept_z)[:n]
    y = torch.full((n,), source_class, dtype=torch.long, device=device)
    return z, y, generator(z, y)
