"""The examiner metrics on histories whose answers are worked out by hand."""

from __future__ import annotations

import numpy as np

from advaudit.audits import examiner_metrics as m

# 2 instances x 6 queries, q = 2 (three iterations)
P = np.array([[0.9, 0.7, 0.2, 0.4, 0.6, 0.8],
              [0.5, 0.5, 0.1, 0.9, 0.3, 0.3]])
VALID = np.array([[True, True, False, True, True, True],
                  [False, False, False, False, False, False]])
PRED = np.array([[0, 0, 1, 1, 0, 0],
                 [1, 1, 0, 0, 0, 0]])
LABELS = np.array([0, 1])


def test_e_t_is_the_mean_of_the_proposals_of_the_iteration_containing_query_b() -> None:
    assert m.iteration_of_query(0, 2) == 1 and m.iteration_of_query(3, 2) == 2 and m.iteration_of_query(6, 2) == 3
    np.testing.assert_allclose(m.e_t(P, 2, 0), [0.8, 0.5])
    np.testing.assert_allclose(m.e_t(P, 2, 3), [0.3, 0.5])
    np.testing.assert_allclose(m.e_t(P, 2, 6), [0.7, 0.3])  # it goes up again: not a running minimum
    np.testing.assert_allclose(m.e_t_curve(P, 2), [[0.8, 0.3, 0.7], [0.5, 0.5, 0.3]])
    np.testing.assert_allclose(m.e_t(P[:, :5], 2, 5), [0.6, 0.3])  # partial last iteration


def test_worst_ignores_invalid_proposals_and_is_nan_without_any() -> None:
    worst = m.worst(P, VALID, 6)
    assert worst[0] == 0.4 and np.isnan(worst[1])  # 0.2 was invalid
    assert m.worst(P, VALID, 1)[0] == 0.9 and m.worst(P, VALID, 0)[0] == 0.9
    assert m.worst(P, VALID, 6, strength=True)[0] == 0.9
    np.testing.assert_allclose(m.worst_curve(P, VALID)[0], [0.9, 0.7, 0.7, 0.4, 0.4, 0.4])
    assert list(m.worst_index(P, VALID)) == [3, -1]


def test_e_t_inside_s_averages_the_valid_proposals_of_a_final_window_of_32(monkeypatch) -> None:
    assert m.final_window(32, 500, 500) == slice(480, 500)     # RL, random search: their (partial) last iteration
    assert m.final_window(1, 500, 500) == slice(468, 500)      # BO's one proposal per iteration: its last 32
    assert m.final_window(8, 64, 500) == slice(32, 64)          # q = 8: the last 4 iterations up to query 64
    assert m.final_window(1, 0, 500) == slice(0, 1)             # T = 0: the first proposal
    monkeypatch.setattr(m, "WINDOW", 4)                          # two iterations of q = 2
    np.testing.assert_allclose(m.e_t_valid(P, VALID, 2, 4), [(0.9 + 0.7 + 0.4) / 3, np.nan])  # 0.2 was invalid
    np.testing.assert_allclose(m.e_t_valid(P, VALID, 2, 6), [(0.4 + 0.6 + 0.8) / 3, np.nan])
    monkeypatch.setattr(m, "WINDOW", 2)                          # one iteration: the paper's l^T on valid proposals
    np.testing.assert_allclose(m.e_t_valid(P, VALID, 2, 4), [0.4, np.nan])


def test_a_failure_counts_only_on_a_valid_proposal() -> None:
    # instance 0: its misclassified query 2 is invalid, query 3 is valid and wrong; instance 1: all invalid
    assert list(m.failed(PRED, VALID, LABELS, 3)) == [False, False]
    assert list(m.failed(PRED, VALID, LABELS, 6)) == [True, False]
