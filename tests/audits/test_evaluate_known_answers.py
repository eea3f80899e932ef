"""The evaluate audit's numbers against a hand-worked example: six items, three classes, known probabilities."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from omegaconf import OmegaConf

from advaudit.audits import evaluate
from advaudit.models.targets.calibration import expected_calibration_error

# true labels and the stand-in target's probabilities; confidences sit inside 15-bin ECE bins, never on an edge
Y = torch.tensor([0, 0, 1, 1, 2, 2])
PROBS = torch.tensor([
    [0.90, 0.05, 0.05],  # true 0, predicted 0, confidence 0.90 (bin 13)
    [0.28, 0.62, 0.10],  # true 0, predicted 1, confidence 0.62 (bin 9), wrong
    [0.09, 0.82, 0.09],  # true 1, predicted 1, confidence 0.82 (bin 12)
    [0.18, 0.72, 0.10],  # true 1, predicted 1, confidence 0.72 (bin 10)
    [0.52, 0.18, 0.30],  # true 2, predicted 0, confidence 0.52 (bin 7), wrong
    [0.09, 0.09, 0.82],  # true 2, predicted 2, confidence 0.82 (bin 12)
])
# per bin: weight * |mean confidence - accuracy|
HAND_ECE = (0.10 + 0.62 + 2 * 0.18 + 0.28 + 0.52) / 6
HAND_TRUE_PROB = (0.90 + 0.28 + 0.82 + 0.72 + 0.30 + 0.82) / 6


def test_confusion_matrix_rows_are_true_classes_and_columns_predicted() -> None:
    # catches: rows and columns swapped (y * k + predicted turned predicted * k + y), or a wrong k
    predicted = PROBS.argmax(1)
    assert evaluate.confusion_matrix(predicted, Y, 3).tolist() == [[1, 1, 0],
                                                                   [0, 2, 0],
                                                                   [1, 0, 1]]
    # one item, true 2 predicted 0: the count sits in row 2, column 0
    assert evaluate.confusion_matrix(torch.tensor([0]), torch.tensor([2]), 3).tolist() == [[0, 0, 0],
                                                                                           [0, 0, 0],
                                                                                           [1, 0, 0]]


def test_ece_matches_the_hand_worked_binning() -> None:
    # catches: one bin instead of 15 (gives 0.4/6), the true-class probability in place of the
    # confidence, an unweighted mean over bins, or a signed gap
    assert expected_calibration_error(PROBS, Y) == pytest.approx(HAND_ECE, abs=1e-6)
    assert expected_calibration_error(PROBS, Y, n_bins=1) == pytest.approx(0.4 / 6, abs=1e-6)
    # all correct at confidence 1: perfectly calibrated
    assert expected_calibration_error(torch.eye(3), torch.arange(3)) == pytest.approx(0.0, abs=1e-12)


class _Split(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.y)


class _FixedTarget:
    """A stand-in target that answers PROBS for the six items."""

    class_names = ["a", "b", "c"]
    num_classes = 3
    meta = {"class_names": class_names}

    def check_input(self, x: torch.Tensor) -> None:
        pass

    def predict_proba(self, x: torch.Tensor, calibrated: bool = False) -> torch.Tensor:
        return PROBS[x.view(-1).long()]


def test_evaluate_run_gives_hand_computed_metrics(monkeypatch, tmp_path: Path) -> None:
    # catches: per-class accuracy from column sums (a transposed matrix gives b=2/3, c=1), ECE or mean
    # true-class probability computed from the predicted class's probability (mean 0.733), accuracy off
    split = _Split(x=torch.arange(6).float().view(6, 1), y=Y)
    datamodule = SimpleNamespace(split=lambda name: split)
    monkeypatch.setattr(evaluate, "load_audit_target", lambda cfg: _FixedTarget())
    monkeypatch.setattr(evaluate, "target_datamodule", lambda target, override: datamodule)
    cfg = OmegaConf.create({"audit": {"name": "evaluate"}, "paths": {"output_dir": str(tmp_path)},
                            "logger": {"csv": {}}})
    result = evaluate.run(cfg)
    assert result["per_class_acc"] == pytest.approx({"a": 0.5, "b": 1.0, "c": 0.5})
    assert result["evaluate/worst_class_acc"] == pytest.approx(0.5)
    assert result["evaluate/acc"] == pytest.approx(4 / 6)
    assert result["evaluate/ece"] == pytest.approx(HAND_ECE, abs=1e-6)
    assert result["evaluate/mean_true_prob"] == pytest.approx(HAND_TRUE_PROB, abs=1e-6)
    assert result["n_items"] == 6
    rows = (tmp_path / "per_instance.csv").read_text().splitlines()
    assert rows[0] == "instance,label,class,true_prob,correct"
    assert rows[2].startswith("1,0,a,0.2") and rows[2].endswith(",False")  # item 1: true a, wrong, p(true)=0.28
