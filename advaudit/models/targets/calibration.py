"""Temperature scaling (Guo et al., 2017) and expected calibration error."""

from __future__ import annotations

import torch
from torch import Tensor


def fit_temperature(logits: Tensor, y: Tensor, max_iter: int = 200) -> float:
    """Fit one positive temperature T minimising the NLL of ``softmax(logits / T)``.

    Args:
        logits: ``[N, K]`` uncalibrated validation logits.
        y: ``[N]`` int64 labels.
    Returns:
        T > 0 (optimised as log T with L-BFGS; 1.0 when ``N == 0``).
    """
    if len(y) == 0:
        return 1.0
    logits = logits.detach().double()
    log_t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([log_t], lr=0.1, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(logits / log_t.exp(), y)
        loss.backward()
        return loss

    optimizer.step(closure)
    return float(log_t.detach().exp().clamp(1e-3, 1e3))


def expected_calibration_error(probs: Tensor, y: Tensor, n_bins: int = 15) -> float:
    """ECE with ``n_bins`` equal-width confidence bins.

    Args:
        probs: ``[N, K]`` predicted class probabilities.
        y: ``[N]`` int64 labels.
    """
    confidence, predicted = probs.max(dim=1)
    correct = (predicted == y).double()
    edges = torch.linspace(0, 1, n_bins + 1, dtype=confidence.dtype)
    bins = torch.bucketize(confidence, edges[1:-1], right=False)
    ece = torch.zeros((), dtype=torch.float64)
    for b in range(n_bins):
        members = bins == b
        if members.any():
            gap = (confidence[members].double().mean() - correct[members].mean()).abs()
            ece += members.double().mean() * gap
    return float(ece)


def reliability_table(probs: Tensor, y: Tensor, n_bins: int = 15) -> dict[str, list[float]]:
    """Per-bin mean confidence, accuracy and count (for reliability diagrams)."""
    confidence, predicted = probs.max(dim=1)
    correct = (predicted == y).double()
    edges = torch.linspace(0, 1, n_bins + 1, dtype=confidence.dtype)
    bins = torch.bucketize(confidence, edges[1:-1], right=False)
    table: dict[str, list[float]] = {"confidence": [], "accuracy": [], "count": []}
    for b in range(n_bins):
        members = bins == b
        n = int(members.sum())
        table["count"].append(n)
        table["confidence"].append(float(confidence[members].mean()) if n else float("nan"))
        table["accuracy"].append(float(correct[members].mean()) if n else float("nan"))
    return table
