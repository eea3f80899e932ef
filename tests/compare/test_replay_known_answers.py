"""Replay's failure-transfer matrix between different checkpoints, and its random-conditions control,
against answers worked by hand.

A one-factor world renders instance ``z`` under condition ``t`` as the two pixels ``[t, label]``; three
black-box targets read them: A and C give the true class probability ``1 - t`` (they fail where
``t > 0.5``; C is A's twin), B gives ``1 - t**2`` (it fails where ``t > 1/sqrt(2)``). Each checkpoint's
recorded worst conditions are chosen, so every cell of the matrix is known before replay runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pytest
import torch
from torch import Tensor

from advaudit.compare import compare_runs
from advaudit.worlds.protocol import Factor, Instances
from tests.compare.fixtures import write_worst_case

MODULE = __name__
IDS, LABELS = [10, 11, 12, 13], [0, 1, 0, 1]
WORLD = {"_target_": f"{MODULE}.LineWorld"}


class LineWorld:
    """Four instances of two classes; condition ``t`` in [0, 1]; image ``[1, 1, 2]`` = ``[t, label]``."""

    factors = [Factor("t", 0.0, 1.0)]
    class_names = ["a", "b"]
    image_shape = (1, 1, 2)

    def instances(self, split: str) -> Instances:
        labels = torch.tensor(LABELS)
        return Instances(labels.float()[:, None], labels, torch.tensor(IDS))

    def render(self, z: Instances, s: Tensor) -> Tensor:
        """``s`` ``[N, q, 1]`` -> ``[N*q, 1, 1, 2]``."""
        n, q, _ = s.shape
        label = z.labels.float()[:, None, None].expand(n, q, 1)
        return torch.cat([s.float(), label], -1).reshape(n * q, 1, 1, 2)


def _probs(x: Tensor, true_prob: Tensor) -> Tensor:
    """``[B, 2]`` probabilities with ``true_prob`` ``[B]`` on the class written in pixel 1."""
    label = x.reshape(len(x), 2)[:, 1].round().clamp(0, 1).long()
    probs = torch.stack([1 - true_prob, 1 - true_prob], 1)
    return probs.scatter(1, label[:, None], true_prob[:, None])


def predict_linear(x: Tensor) -> Tensor:
    """Targets A and C: true-class probability ``1 - t``."""
    return _probs(x, 1 - x.reshape(len(x), 2)[:, 0].clamp(0, 1))


def predict_square(x: Tensor) -> Tensor:
    """Target B: true-class probability ``1 - t**2``."""
    return _probs(x, 1 - x.reshape(len(x), 2)[:, 0].clamp(0, 1) ** 2)


BLOCKS = {name: {"function": f"{MODULE}.{function}", "class_names": ["a", "b"], "input_shape": [1, 1, 2],
                 "normalization": "model", "name": name}
          for name, function in (("A", "predict_linear"), ("B", "predict_square"), ("C", "predict_linear"))}
TRUE_PROB = {"A": lambda t: 1 - t, "B": lambda t: 1 - t ** 2, "C": lambda t: 1 - t}
# each checkpoint's worst condition t per instance (IDS order), per seed
WORST_T = {("A", 0): [0.9, 0.8, 0.6, 0.2], ("A", 1): [0.65, 0.1, 0.1, 0.1],
           ("B", 0): [0.95, 0.3, 0.75, 0.1], ("B", 1): [0.95, 0.3, 0.75, 0.1],
           ("C", 0): [0.55, 0.4, 0.3, 0.2], ("C", 1): [0.55, 0.4, 0.3, 0.2]}
RANDOM_ACCURACY = {("A", 0): 0.9, ("A", 1): 0.7, ("B", 0): 0.6, ("B", 1): 0.6, ("C", 0): 0.5, ("C", 1): 0.9}


def _write_run(run_dir: Path, name: str, seed: int, recorded: Sequence[float]) -> None:
    """A worst-case result of ``name`` at ``seed`` whose worst conditions are ``WORST_T[name, seed]``."""
    worst_t = WORST_T[name, seed]
    path = write_worst_case(run_dir, name, seed, np.asarray(recorded), np.asarray(recorded) < 0.5,
                            worst_s=[{"t": t} for t in worst_t], instances=IDS)
    result = json.loads(path.read_text())
    result["config"].update(target=BLOCKS[name], world=WORLD)
    result["examine/random_accuracy"] = RANDOM_ACCURACY[name, seed]
    for row, label in zip(result["per_instance"], LABELS):
        row.update(label=label, **{"class": LineWorld.class_names[label]})
    path.write_text(json.dumps(result))


def test_replay_gives_the_hand_worked_transfer_matrix_and_control(tmp_path: Path) -> None:
    for name in "ABC":
        for seed in (0, 1):
            recorded = [float(TRUE_PROB[name](t)) for t in WORST_T[name, seed]]
            if (name, seed) == ("B", 1):
                recorded[1] += 0.05  # one recorded worst that re-rendering does not give back
            _write_run(tmp_path / "runs" / f"{name}{seed}", name, seed, recorded)
    summary = compare_runs([tmp_path / "runs"], tmp_path / "out")
    [group] = summary["groups"]
    assert not group["notes"], group["notes"]
    replay = group["replay"]
    # A's 4 failures (t > 0.5: 3 at seed 0, 1 at seed 1): B fails 2 of them (t > 0.707, both at seed 0), C all
    # B's 4 failures (t = 0.95, 0.75 at both seeds): A and C fail on all; C's 2 (t = 0.55): A fails, B does not
    assert replay["source_failures"] == {"A": 4, "B": 4, "C": 2}
    assert replay["transfer"] == {"A": {"A": 1.0, "B": 0.5, "C": 1.0},
                                  "B": {"A": 1.0, "B": 1.0, "C": 1.0},
                                  "C": {"A": 1.0, "B": 0.0, "C": 1.0}}
    # the control: 1 - examine/random_accuracy of each checkpoint's own runs, averaged over seeds
    assert replay["random_failure_rate"] == pytest.approx({"A": 0.2, "B": 0.4, "C": 0.3})
    for source in "ABC":
        worst_t = np.array(WORST_T[source, 0] + WORST_T[source, 1])
        for scored in "ABC":  # mean true-class probability of every instance's worst condition, both seeds
            assert replay["true_prob"][source][scored] == pytest.approx(float(np.mean(TRUE_PROB[scored](worst_t))))
    assert replay["reproduced"] == {"A": 1.0, "B": 7 / 8, "C": 1.0}
    rows = pd.read_csv(tmp_path / "out" / f"replay_{group['slug']}.csv")
    own = rows[(rows["source"] == "A") & (rows["scored"] == "A")].sort_values(["seed", "instance"])
    assert own["instance"].tolist() == IDS * 2
    assert own["true_prob"].tolist() == pytest.approx([0.1, 0.2, 0.4, 0.8, 0.35, 0.9, 0.9, 0.9])
    assert (tmp_path / "out" / f"replay_{group['slug']}.png").is_file()
