"""Choosing the N instances to examine.

``best_per_class`` (the paper): per class, the instance of the split with the highest mean
true-class probability over a few random renders. ``random``: N instances drawn with the seed.
"""

from __future__ import annotations

import torch
from torch import Tensor

from advaudit.errors import require
from advaudit.worlds.protocol import Instances, World


def true_class_prob(target, x: Tensor, labels: Tensor, calibrated: bool) -> Tensor:
    """``[B]`` probability the target gives each image's true class."""
    probs = target.predict_proba(x, calibrated=calibrated)
    return probs.gather(1, labels.to(probs.device).view(-1, 1)).squeeze(1).cpu()


def select_instances(world: World, target, split: str, method: str, n: int | None, renders: int,
                     seed: int, calibrated: bool = False) -> Instances:
    """N instances of ``split`` chosen by ``method`` (see module docstring)."""
    pool = world.instances(split)
    generator = torch.Generator().manual_seed(seed)
    if method == "random":
        require(n is not None and n >= 1, "selection=random needs audit.n_instances >= 1")
        require(n <= len(pool), f"audit.n_instances={n} but the {split} split has only {len(pool)} instances; "
                f"use n_instances <= {len(pool)}")
        return pool.subset(torch.randperm(len(pool), generator=generator)[:n].sort().values)
    require(method == "best_per_class", f"unknown selection {method!r}; use best_per_class or random")
    scores = torch.zeros(len(pool))
    chunk = max(1, 2048 // renders)
    for start in range(0, len(pool), chunk):
        index = torch.arange(start, min(start + chunk, len(pool)))
        part = pool.subset(index)
        s = world.random_conditions(len(part), renders, generator)
        x = world.render(part, s)
        p = true_class_prob(target, x, part.labels.repeat_interleave(renders), calibrated)
        scores[index] = p.view(len(part), renders).mean(1)
    chosen = []
    labels = pool.labels.cpu()
    for cls in labels.unique().tolist():
        members = (labels == cls).nonzero().squeeze(1)
        chosen.append(members[scores[members].argmax()])
    chosen_t = torch.stack(chosen)
    if n is not None:
        require(n <= len(chosen_t), f"audit.n_instances={n} but best_per_class gives {len(chosen_t)} "
                "(one per class); use selection=random for more")
        chosen_t = chosen_t[:n]
    return pool.subset(chosen_t)
