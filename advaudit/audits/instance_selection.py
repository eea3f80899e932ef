"""Choosing the N instances to examine.

- ``stratified`` (the default): per class, instances of the split drawn with the seed, N spread over
  the classes in turn (one per class when N is not given). The choice does not look at the model,
  so every checkpoint examined with the same settings and seed gets the same instances: comparisons
  between checkpoints are paired on all of them.
- ``best_per_class`` (the paper, Sec. 4.1; kept for the reproductions): per class, the instance of
  the split with the highest mean true-class probability over a few random renders *under this
  checkpoint*, so two checkpoints are in general examined on different instances and a paired
  comparison has only the ones they happen to share.
- ``random``: N instances drawn with the seed (also the same for every checkpoint).
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


DESIGNS = {
    "stratified": ("paired", "per class, instances drawn with the seed, the same for every checkpoint examined "
                   "with this seed"),
    "random": ("paired", "instances drawn with the seed, the same for every checkpoint examined with this seed"),
    "best_per_class": ("per checkpoint", "per class, the instance this checkpoint is most confident on (the paper's "
                       "choice): checkpoints are examined on different instances, and paired comparisons use only "
                       "the ones they share; audit.selection=stratified examines the same ones"),
}


def selection_design(method: str) -> dict[str, str]:
    """``{"selection", "design", "description"}`` for the report: is this choice paired across checkpoints?"""
    design, description = DESIGNS[method]
    return {"selection": method, "design": design, "description": description}


def stratified(labels: Tensor, n: int | None, generator: torch.Generator, split: str = "") -> Tensor:
    """Sorted indices of ``n`` instances (default one per class): each class's members in a seeded
    order, taken one class after another (class 0's first, class 1's first, ..., class 0's second, ...)."""
    classes = labels.unique().tolist()
    orders = [(labels == c).nonzero().squeeze(1)[torch.randperm(int((labels == c).sum()), generator=generator)]
              for c in classes]
    n = len(classes) if n is None else int(n)
    require(1 <= n <= len(labels), f"audit.n_instances={n} but the {split} split has only {len(labels)} instances; "
            f"use n_instances <= {len(labels)}")
    chosen = [order[k] for k in range(max(len(o) for o in orders)) for order in orders if k < len(order)][:n]
    return torch.stack(chosen).sort().values


def select_instances(world: World, target, split: str, method: str, n: int | None, renders: int,
                     seed: int, calibrated: bool = False) -> Instances:
    """N instances of ``split`` chosen by ``method`` (see module docstring)."""
    pool = world.instances(split)
    generator = torch.Generator().manual_seed(seed)
    if method == "stratified":
        return pool.subset(stratified(pool.labels.cpu(), n, generator, split))
    if method == "random":
        require(n is not None and n >= 1, "selection=random needs audit.n_instances >= 1")
        require(n <= len(pool), f"audit.n_instances={n} but the {split} split has only {len(pool)} instances; "
                f"use n_instances <= {len(pool)}")
        return pool.subset(torch.randperm(len(pool), generator=generator)[:n].sort().values)
    require(method == "best_per_class", f"unknown selection {method!r}; use stratified, best_per_class or random")
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
