"""Small plotting helpers shared by audits (matplotlib, Agg backend, PNG on disk)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import Tensor  # noqa: E402


def save_figure(fig: "plt.Figure", path: str | Path) -> Path:
    """Save ``fig`` as a PNG at ``path`` (folders created) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def image_grid(images: Tensor, path: str | Path, titles: list[str] | None = None,
               columns: int = 8, scale: float = 1.4) -> Path:
    """A grid of images ``[N, C, H, W]`` in [0, 1] with optional per-image titles, as PNG.

    The images are laid out as one picture on one axes (``scale`` inches a cell), each title in the band
    above its image: the same picture as one axes per image, drawn several times faster (4.5 s for 80 titled
    96-px images with an axes each; one axes takes a fraction of that)."""
    n = len(images)
    rows = max(1, (n + columns - 1) // columns)
    pictures = images.detach().cpu().float().clamp(0, 1)
    if pictures.shape[1] == 1:  # grey: the grey colour map from 0 (black) to 1 (white)
        pictures = pictures.expand(-1, 3, -1, -1)
    height, width = pictures.shape[-2:]
    band = int(round(0.15 * height)) if titles else 0         # room above each image for its title, in pixels
    cell_h, cell_w = int(round(height * 1.15)) + band, int(round(width * 1.15))
    mosaic = torch.ones(rows * cell_h, columns * cell_w, 3)
    for i in range(n):
        top = (i // columns) * cell_h + band + (cell_h - band - height) // 2
        left = (i % columns) * cell_w + (cell_w - width) // 2
        mosaic[top:top + height, left:left + width] = pictures[i, :3].permute(1, 2, 0)
    fig = plt.figure(figsize=(columns * scale, rows * scale * 1.15))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(mosaic.numpy(), aspect="auto", interpolation="antialiased")
    ax.axis("off")
    for i, title in enumerate((titles or [])[:n]):
        top = (i // columns) * cell_h + band + (cell_h - band - height) // 2
        ax.text((i % columns + 0.5) * cell_w - 0.5, top - 1, title, ha="center", va="bottom", fontsize=6,
                linespacing=1.0)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def reliability_diagram(table: dict[str, list[float]], path: str | Path, title: str = "") -> Path:
    """Bar chart of per-bin accuracy against confidence (from ``calibration.reliability_table``)."""
    n_bins = len(table["count"])
    centers = (torch.arange(n_bins) + 0.5) / n_bins
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.bar(centers, [0 if a != a else a for a in table["accuracy"]], width=1 / n_bins,
           edgecolor="black", alpha=0.7, label="accuracy")
    ax.plot([0, 1], [0, 1], "--", color="gray", label="perfect calibration")
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.legend(loc="upper left")
    return save_figure(fig, path)


def confusion_figure(matrix, class_names: list[str], path: str | Path) -> Path:
    """Confusion matrix ``[K, K]`` of counts (rows: true class, columns: predicted) as PNG.

    Colour: the share of the row's items (a colour bar says so); text: the count in each cell
    (blank for 0), so small classes are read by their numbers, not only by their shade.
    """
    counts = np.asarray(matrix, dtype=float)
    shares = counts / np.clip(counts.sum(1, keepdims=True), 1, None)
    k = len(counts)
    size = max(4.5, 0.42 * k + 2.2)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    fontsize = 7 if k <= 12 else 5
    for i in range(k):
        for j in range(k):
            if counts[i, j]:
                ax.text(j, i, f"{int(counts[i, j])}", ha="center", va="center", fontsize=fontsize,
                        color="white" if shares[i, j] > 0.55 else "black")
    ax.set_xticks(range(k), class_names, rotation=90, fontsize=7)
    ax.set_yticks(range(k), class_names, fontsize=7)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of the true class's items")
    return save_figure(fig, path)
