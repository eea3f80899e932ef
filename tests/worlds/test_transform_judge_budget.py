"""The reference judge's wall-clock schedule (train_transform_judge(..., budget_s=...))."""

import math

from advaudit.worlds.transform_judge import budget_lr


def test_budget_lr_warms_up_peaks_and_anneals() -> None:
    lr = 0.003
    fractions = [i / 100 for i in range(101)]
    rates = [budget_lr(lr, f) for f in fractions]
    assert math.isclose(rates[0], 0.04 * lr)
    assert math.isclose(rates[10], lr)  # the peak at the end of the 10% warm-up
    assert all(a < b for a, b in zip(rates[:10], rates[1:11]))  # rising during the warm-up
    assert all(a > b for a, b in zip(rates[10:100], rates[11:101]))  # falling after it
    assert math.isclose(rates[-1], lr / 1e4)
    assert math.isclose(budget_lr(lr, 0.55), (lr + lr / 1e4) / 2)  # cosine: half-way at the middle of the decay
