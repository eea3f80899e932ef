"""Oracles: ground-truth labels for experiments, a person at the terminal for real audits.

The terminal oracle shows each queried item (an image saved as PNG, or the feature row) and the
model's prediction, asks whether the prediction is right, and appends every answer to
``answers.jsonl`` at once, so a labelling session can stop at any point and resume where it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import torch
from torch import Tensor

from advaudit.core.plots import image_grid
from advaudit.core.records import append_jsonl, read_jsonl


class TerminalOracle:
    """Asks a person about one pool (``R = 1``); answers are keyed by dataset item index.

    Args:
        items: ``[n, *shape]`` the eligible items; ``pool`` ``[P]`` their positions in the pool.
        predicted: class name the model predicts for every item (the critical class).
        confidence: ``[n]`` calibrated confidence.
        out: directory for ``answers.jsonl`` and the item images.
        feature_names: column names when items are table rows (printed instead of saved as images).
        ask: the prompt function (``input`` when None; tests pass a scripted one).
    """

    def __init__(self, items: Tensor, pool: Tensor, dataset_index: Tensor, predicted: str, confidence: Tensor,
                 out: Path, feature_names: Sequence[str] | None = None,
                 ask: Callable[[str], str] | None = None) -> None:
        self.items, self.pool, self.dataset_index = items, pool, dataset_index
        self.predicted, self.confidence = predicted, confidence
        self.out, self.feature_names = Path(out), feature_names
        self.ask = ask if ask is not None else (lambda prompt: input(prompt))  # resolved at call time
        self.path = self.out / "answers.jsonl"
        self.answers = {int(r["item"]): bool(r["is_error"]) for r in read_jsonl(self.path)} if self.path.exists() else {}

    def __call__(self, rows: Tensor, positions: Tensor) -> Tensor:
        return torch.tensor([self._answer(int(position)) for position in positions])

    def _answer(self, position: int) -> bool:
        local = int(self.pool[position])
        key = int(self.dataset_index[local])
        if key in self.answers:
            return self.answers[key]
        shown = self._show(local, key)
        while True:
            reply = self.ask(f"{shown}\nthe model says {self.predicted!r} ({float(self.confidence[local]):.2f}); "
                             "is that right? [y/n] ").strip().lower()
            if reply in ("y", "yes", "n", "no"):
                break
        is_error = reply.startswith("n")
        self.answers[key] = is_error
        append_jsonl(self.path, {"item": key, "is_error": is_error, "predicted": self.predicted,
                                 "confidence": float(self.confidence[local])})
        return is_error

    def _show(self, local: int, key: int) -> str:
        item = self.items[local]
        if item.dim() == 3:
            path = image_grid(item[None], self.out / "items" / f"item_{key}.png", columns=1, scale=3.0)
            return f"item {key}: see {path}"
        names = self.feature_names or [f"x{i}" for i in range(item.numel())]
        return f"item {key}: " + ", ".join(f"{n}={float(v):.4g}" for n, v in zip(names, item.flatten()))
