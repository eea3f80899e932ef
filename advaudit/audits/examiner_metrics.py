"""The worst-case audit's two numbers, computed from the per-query history of an examination.

**E_T** is the metric of the adversarial-examiner paper, Algorithm 1::

    for t = 1 .. T:  s_i^t = examiner.generate();  l_i^t = L(f(g(z_i, s_i^t)), y(z_i));  examiner.update(s_i^t, l_i^t)
    return  E_examiner = (1/N) * sum_i l_i^T

with L the post-softmax probability of the true class. It is the loss of what the examiner
*proposes* at its T-th iteration, not the best found so far, so it can go up as well as down
(the paper's Table 2). An iteration is one ``examiner.generate()``: for an examiner that proposes
``q`` candidates per iteration (the RL examiner's 32 samples per policy update, random search's
batch) ``l_i^T`` is the mean over that iteration's ``q`` proposals; for BO (``q = 1``) it is its
T-th proposal. Budgets are counted in queries ``b``; the iteration that contains query ``b`` is
``ceil(b / q)`` (query 0 means the first iteration, before any adaptation).

**E_T inside S** (``examine/E_T_valid``, the worst-case audit's primary metric) is E_T measured where the
paper measures it: on proposals that keep the label. The paper's S keeps the label by construction, so
every ``l_i^T`` is a loss on a labelled view; advaudit's box does not (a reference judge rejects about half
of Fashion-MNIST's random views, 40% of them because the clean image itself is ambiguous to it), and an
E_T that averages proposals outside S scores an examiner that walked out of S as if it had found
weaknesses. So ``l_i^T`` is the mean true-class probability of the *valid* proposals of the final window:
the last iteration when it holds at least :data:`WINDOW` proposals, else the last iterations that make
:data:`WINDOW` (BO's ``q = 1``: its last 32 proposals, not one: a single proposal per instance is too noisy to
pair two checkpoints with). An instance with no valid proposal in the window has none (NaN) and is left
out of paired tests. The paper's E_T over all proposals is reported beside it (``examine/E_T``).

**worst** is the running minimum (maximum in strength mode) of the true-class probability over
the *valid* proposals among the first ``b`` queries (at least one): the harshest label-preserving
condition found. An instance with no valid proposal yet has no worst case (NaN), never a
made-up one.

Shapes: ``true_prob``, ``valid`` and ``predicted`` are ``[N, Q]`` in query order.
"""

from __future__ import annotations

import math

import numpy as np


#: E_T inside S averages at least this many final proposals per instance (module docstring)
WINDOW = 32


def iteration_of_query(b: int, q: int) -> int:
    """1-based iteration that contains query ``b`` (``b = 0``: the first iteration)."""
    return max(1, math.ceil(int(b) / int(q)))


def e_t(true_prob: np.ndarray, q: int, b: int) -> np.ndarray:
    """``[N]`` mean true-class probability of the proposals of the iteration containing query ``b``
    (paper's ``l_i^T``). A partial last iteration averages the proposals it made."""
    queries = true_prob.shape[1]
    it = iteration_of_query(min(b, queries), q)
    window = true_prob[:, (it - 1) * q: min(it * q, queries)]
    return window.mean(1)


def final_window(q: int, b: int, queries: int) -> slice:
    """The queries (columns) of E_T inside S at budget ``b``: the iteration that contains query ``b`` and the
    ones before it, as many as make :data:`WINDOW` queries (one iteration when ``q >= WINDOW``: RL's and random
    search's 32; the last 32 proposals of BO's one per iteration), within the ``queries`` made."""
    it = iteration_of_query(min(b, queries), q)
    per = max(1, math.ceil(WINDOW / q))
    return slice(max(0, it - per) * q, min(it * q, queries))


def window_iterations(q: int, budgets: list[int], queries: int) -> set[int]:
    """The iterations (0-based) whose proposals lie in the final window (:func:`final_window`) of any of
    ``budgets``: the ones whose validity E_T inside S reads."""
    out: set[int] = set()
    for b in budgets:
        cols = final_window(q, b, queries)
        out.update(range(cols.start // q, math.ceil(cols.stop / q)))
    return out


def e_t_valid(true_prob: np.ndarray, valid: np.ndarray, q: int, b: int) -> np.ndarray:
    """``[N]`` E_T inside S: the mean true-class probability of the *valid* proposals of the final window at
    budget ``b`` (:func:`final_window`; NaN for an instance with none valid there)."""
    cols = final_window(q, b, true_prob.shape[1])
    p, ok = true_prob[:, cols], valid[:, cols]
    count = ok.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (p * ok).sum(1) / np.maximum(count, 1), np.nan)


def worst(true_prob: np.ndarray, valid: np.ndarray, b: int, strength: bool = False) -> np.ndarray:
    """``[N]`` lowest (``strength``: highest) true-class probability among the valid proposals of the
    first ``max(b, 1)`` queries; NaN for an instance with none valid."""
    upto = max(1, min(int(b), true_prob.shape[1]))
    p, ok = true_prob[:, :upto], valid[:, :upto]
    fill = -np.inf if strength else np.inf
    masked = np.where(ok, p, fill)
    best = masked.max(1) if strength else masked.min(1)
    return np.where(np.isfinite(best), best, np.nan)


def worst_index(true_prob: np.ndarray, valid: np.ndarray, strength: bool = False) -> np.ndarray:
    """``[N]`` query index of each instance's worst valid proposal over the whole history (-1: none valid)."""
    fill = -np.inf if strength else np.inf
    masked = np.where(valid, true_prob, fill)
    index = masked.argmax(1) if strength else masked.argmin(1)
    return np.where(valid.any(1), index, -1)


def failed(predicted: np.ndarray, valid: np.ndarray, labels: np.ndarray, b: int) -> np.ndarray:
    """``[N]`` bool: some valid proposal among the first ``max(b, 1)`` queries is misclassified."""
    upto = max(1, min(int(b), predicted.shape[1]))
    return ((predicted[:, :upto] != labels[:, None]) & valid[:, :upto]).any(1)


def e_t_curve(true_prob: np.ndarray, q: int) -> np.ndarray:
    """``[N, ceil(Q / q)]``: each instance's ``l_i^t`` at every iteration t (partial last one included)."""
    queries = true_prob.shape[1]
    return np.stack([true_prob[:, start: start + q].mean(1) for start in range(0, queries, q)], 1)


def worst_curve(true_prob: np.ndarray, valid: np.ndarray, strength: bool = False) -> np.ndarray:
    """``[N, Q]`` running minimum (maximum) over valid proposals; NaN until the first valid one."""
    fill = -np.inf if strength else np.inf
    masked = np.where(valid, true_prob, fill)
    running = np.maximum.accumulate(masked, 1) if strength else np.minimum.accumulate(masked, 1)
    return np.where(np.isfinite(running), running, np.nan)
