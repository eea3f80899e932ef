"""Fashion-MNIST read from the Debian package ``dataset-fashion-mnist`` (idx files, gzip)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import torch

from advaudit.data.base import ArrayDataModule, as_float_images
from advaudit.data.settings import FashionMNISTDatasetConf
from advaudit.data.split import Split
from advaudit.errors import AdvauditError

#: the Debian package's folder (:class:`~advaudit.data.settings.FashionMNISTDatasetConf`, its one declaration)
DEFAULT_ROOT = FashionMNISTDatasetConf.root
CLASS_NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat",
               "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def read_idx(path: Path) -> np.ndarray:
    """Read a (gzipped) idx file into a uint8 array of its declared shape."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    magic = int.from_bytes(data[:4], "big")
    if magic >> 8 != 0x08:
        raise AdvauditError(f"{path} is not an unsigned-byte idx file (magic {magic:#x})")
    ndim = magic & 0xFF
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


class FashionMNISTDataModule(ArrayDataModule):
    """Fashion-MNIST: 60,000 training and 10,000 test images, ``[1, 28, 28]`` in [0, 1].

    Args:
        root: folder holding the four idx ``.gz`` files (the Debian package's by default).
        **kwargs: :class:`ArrayDataModule` options (batch size, val fraction, seed, bias, ...).
    """

    def __init__(self, root: str = DEFAULT_ROOT, **kwargs) -> None:
        super().__init__(**kwargs)
        self.root = Path(root)

    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        splits = {}
        for name, (images, labels) in _FILES.items():
            image_path, label_path = self.root / images, self.root / labels
            if not image_path.exists() or not label_path.exists():
                raise AdvauditError(
                    f"Fashion-MNIST not found at {self.root} (missing {image_path.name}); install it "
                    f"with `apt-get install -y dataset-fashion-mnist` or set dataset.root=<folder>"
                )
            x = as_float_images(torch.from_numpy(read_idx(image_path).copy()))
            y = torch.from_numpy(read_idx(label_path).astype(np.int64))
            splits[name] = Split(x, y)
        return splits, list(CLASS_NAMES)
