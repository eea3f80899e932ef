"""Which instance ``best_per_class`` picks, on a stand-in world whose true-class probabilities are set by hand."""

from __future__ import annotations

import torch

from advaudit.audits.instance_selection import select_instances
from advaudit.worlds.protocol import Instances

# per instance, the true-class probability of each of its three renders
RENDER_PROBS = torch.tensor([
    [0.90, 0.10, 0.20],  # id 10, class 0: mean 0.40 (the best single render of class 0, not the best mean)
    [0.60, 0.60, 0.60],  # id 11, class 0: mean 0.60, the best of class 0
    [0.30, 0.30, 0.30],  # id 12, class 0: mean 0.30, the worst of class 0
    [0.20, 0.20, 0.20],  # id 13, class 1: mean 0.20, the worst of class 1
    [0.70, 0.80, 0.90],  # id 14, class 1: mean 0.80, the best of class 1
])
LABELS = torch.tensor([0, 0, 0, 1, 1])


class _TableWorld:
    """Each render of instance i under render index r is the number RENDER_PROBS[i, r % 3]."""

    def instances(self, split: str) -> Instances:
        return Instances(torch.arange(len(LABELS)), LABELS.clone(), torch.arange(10, 10 + len(LABELS)))

    def random_conditions(self, n: int, q: int, generator: torch.Generator | None = None) -> torch.Tensor:
        return torch.arange(q).float().expand(n, q).unsqueeze(2)  # [n, q, 1]: the render index

    def render(self, z: Instances, s: torch.Tensor) -> torch.Tensor:
        rows = z.data.repeat_interleave(s.shape[1])
        return RENDER_PROBS[rows, s.reshape(-1).long() % 3].view(-1, 1)


class _EchoTarget:
    """Gives every class the rendered number, so the true-class probability is that number."""

    def predict_proba(self, x: torch.Tensor, calibrated: bool = False) -> torch.Tensor:
        return x.view(-1, 1).expand(-1, 2)


def test_best_per_class_picks_each_class_highest_mean_true_class_probability() -> None:
    # catches: argmax turned argmin (would give ids 12 and 13), the best single render instead of the
    # mean over renders (would give id 10), or scores written to the wrong instances
    chosen = select_instances(_TableWorld(), _EchoTarget(), "val", "best_per_class", None, renders=3, seed=0)
    assert chosen.ids.tolist() == [11, 14]
    assert chosen.labels.tolist() == [0, 1]


def test_best_per_class_scores_every_chunk_and_cuts_to_n_in_class_order() -> None:
    # renders=1023 repeats the table's three columns 341 times (the same means) and scores 2048 // 1023 = 2
    # instances per chunk, so the five span three chunks; catches scores kept for one chunk only
    chunked = select_instances(_TableWorld(), _EchoTarget(), "val", "best_per_class", None, renders=1023, seed=0)
    assert chunked.ids.tolist() == [11, 14]
    # renders=1 sees column 0 only: id 10 (0.90) leads class 0 and id 14 (0.70) class 1; n=1 keeps class 0's
    first_render = select_instances(_TableWorld(), _EchoTarget(), "val", "best_per_class", None, 1, seed=0)
    assert first_render.ids.tolist() == [10, 14]
    assert select_instances(_TableWorld(), _EchoTarget(), "val", "best_per_class", 1, 1, seed=0).ids.tolist() == [10]
