"""The examiner searches S, and every report says how far it moved from T = 0.

Known answers: with ``audit.validity.in_loss=barrier`` the loss told to the examiner is exactly ``(1 - p) x valid``
for every query of ``steps.jsonl`` (the model held outside S); with ``none`` it is ``1 - p``. The movement summary
of final against random-condition probabilities is negative with an interval below 0 when the final ones are
lower, and said not to move when they are not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from advaudit.audits.examiner_movement import movement, movement_words
from advaudit.core.records import read_jsonl
from tests.conftest import worst_case_overrides


def test_movement_is_negative_with_its_interval_when_the_final_proposals_are_lower() -> None:
    rng = np.random.default_rng(0)
    baseline = rng.uniform(0.5, 0.9, 40)
    moved = movement(baseline - 0.3 + rng.normal(0, 0.05, 40), baseline, strength=False)
    assert moved["moved"] and moved["hi"] < 0 and moved["mean"] == pytest.approx(-0.3, abs=0.03) and moved["n"] == 40
    still = movement(baseline + rng.normal(0, 0.05, 40), baseline, strength=False)
    assert not still["moved"] and still["lo"] < 0 < still["hi"]
    assert movement_words(still, "E_T inside S", "rl").startswith("Warning: the rl examiner did not move from T = 0")
    assert not movement(baseline - 0.3, baseline, strength=True)["moved"]        # strength searches upwards
    assert movement(np.full(3, np.nan), baseline[:3], strength=False)["n"] == 0   # no valid final view: no number


@pytest.mark.parametrize("in_loss", ["barrier", "none"])
def test_the_examiner_is_told_no_loss_outside_s_under_the_barrier(make_cfg, tiny_shapes_target: Path,
                                                                   in_loss: str) -> None:
    from advaudit.tasks import examine

    result = examine(make_cfg("examine", worst_case_overrides(tiny_shapes_target, f"audit.validity.in_loss={in_loss}")))
    out = Path(result["report"]).parent
    told = torch.load(out / "examiner_state.pt", weights_only=True)["examiner"]["Y"].numpy()   # [N, Q]
    records = sorted(read_jsonl(out / "steps.jsonl"), key=lambda r: (r["step"], r["instance"]))
    order = {i: k for k, i in enumerate(r["instance"] for r in records if r["step"] == 0)}
    p, valid = np.zeros_like(told), np.zeros(told.shape, bool)
    for r in records:
        q = len(r["true_prob"])
        p[order[r["instance"]], r["step"] * q:(r["step"] + 1) * q] = r["true_prob"]
        valid[order[r["instance"]], r["step"] * q:(r["step"] + 1) * q] = [v is True for v in r["valid"]]
    expected = (1 - p) * valid if in_loss == "barrier" else 1 - p
    np.testing.assert_allclose(told, expected, atol=1e-6)
    assert (~valid).any()                     # the case the barrier is about occurred
    assert result["examine/E_T_valid_moved/lo"] <= result["examine/E_T_valid_moved"] <= result["examine/E_T_valid_moved/hi"]
    assert "examiner_moved_words" in result and "random_accuracy" in result["per_instance"][0]
    assert ("searched S" in Path(result["report"]).read_text()) == (in_loss == "barrier")
