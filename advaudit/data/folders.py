"""Users' own images: an image folder (class per sub-folder) or any torchvision dataset class.

Images are resized to ``image_size`` and held in memory as ``[N, C, H, W]`` float32 in [0, 1]; that
suits audit-sized data (tens of thousands of small images), not ImageNet-scale training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import torch
from torch.utils.data import Dataset

from advaudit.data.base import ArrayDataModule
from advaudit.data.split import Split
from advaudit.errors import AdvauditError, require, warn


def _to_split(dataset: Dataset, image_size: int, channels: int, strict: bool = False) -> Split:
    """Materialise a (PIL image, label) dataset as a :class:`Split` of resized tensors.

    For an image folder, files that cannot be read as images are named and skipped, with a count
    in one warning, or refused when ``strict``.
    """
    from torchvision.transforms import v2  # torchvision is slow to import; only this path needs it

    transform = v2.Compose([
        v2.ToImage(), v2.Grayscale(channels) if channels == 1 else v2.RGB(),
        v2.Resize((image_size, image_size), antialias=True), v2.ToDtype(torch.float32, scale=True),
    ])
    xs, ys = [], []
    for image, label in _readable_images(dataset, strict):
        xs.append(transform(image))
        ys.append(int(label))
    require(len(xs) > 0, "the dataset is empty; point dataset.root at a folder with images")
    return Split(torch.stack(xs), torch.tensor(ys, dtype=torch.long))


def _readable_images(dataset: Dataset, strict: bool) -> Iterator[tuple[Any, int]]:
    """``(image, label)`` pairs; an image folder's unreadable files are skipped (or refused)."""
    samples = getattr(dataset, "samples", None)
    if samples is None:
        yield from dataset  # a torchvision dataset class reads its own files
        return
    bad: list[str] = []
    for path, label in samples:
        try:
            image = dataset.loader(path)
            image.load()
        except (OSError, ValueError, SyntaxError) as error:  # PIL: unidentified, truncated, broken
            if strict:
                raise AdvauditError(f"image {path} cannot be read ({type(error).__name__}: "
                                    f"{str(error).splitlines()[0][:120]}); remove or replace it, or set "
                                    "dataset.strict=false to skip unreadable images") from None
            bad.append(str(path))
            continue
        yield image, label
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        warn(f"skipped {len(bad)} of {len(samples)} image file(s) that cannot be read: {shown} "
             "(dataset.strict=true refuses them instead)")


class ImageFolderDataModule(ArrayDataModule):
    """Images in ``root/<class>/*.png|jpg``; or ``root/train/<class>`` + ``root/test/<class>``.

    Args:
        root: the folder. Without ``train``/``test`` sub-folders, a seeded stratified
            ``test_fraction`` is held out.
        image_size: side length images are resized to.
        channels: 1 (grayscale) or 3 (RGB).
        strict: refuse unreadable image files (``True``) or name and skip them with a count.
    """

    def __init__(self, root: str, image_size: int = 32, channels: int = 3,
                 test_fraction: float = 0.2, strict: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        require(channels in (1, 3), f"channels={channels}; use 1 or 3")
        self.root, self.image_size, self.channels = Path(root), image_size, channels
        self.test_fraction, self.strict = test_fraction, bool(strict)

    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        from torchvision.datasets import ImageFolder  # torchvision is slow to import; only this path needs it

        require(self.root.is_dir(), f"image folder {self.root} does not exist; set dataset.root=<folder>")
        if (self.root / "train").is_dir() and (self.root / "test").is_dir():
            train, test = ImageFolder(self.root / "train"), ImageFolder(self.root / "test")
            require(train.classes == test.classes, f"train classes {train.classes} differ from "
                    f"test classes {test.classes} under {self.root}")
            return {"train": _to_split(train, self.image_size, self.channels, self.strict),
                    "test": _to_split(test, self.image_size, self.channels, self.strict)}, list(train.classes)
        try:
            full = ImageFolder(self.root)
        except (FileNotFoundError, RuntimeError) as error:
            raise AdvauditError(f"no class sub-folders with images under {self.root}: {error}") from None
        split = _to_split(full, self.image_size, self.channels, self.strict)
        generator = torch.Generator().manual_seed(self.seed)
        order = torch.randperm(len(split), generator=generator)
        n_test = max(1, int(round(self.test_fraction * len(split))))
        return {"train": split.subset(order[n_test:].sort().values),
                "test": split.subset(order[:n_test].sort().values)}, list(full.classes)


class TorchvisionDataModule(ArrayDataModule):
    """Any torchvision dataset class already on disk, e.g. ``name=CIFAR10 root=/data/cifar``.

    The class is built as ``cls(root, train=True/False, download=False)`` or, for datasets with a
    ``split`` argument, ``cls(root, split="train"/"test", download=False)``. Nothing is downloaded.
    """

    def __init__(self, name: str, root: str, image_size: int = 32, channels: int = 3,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name, self.root = name, root
        self.image_size, self.channels = image_size, channels

    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        import torchvision.datasets as tvd  # torchvision is slow to import; only this path needs it

        cls = getattr(tvd, self.name, None)
        require(cls is not None and isinstance(cls, type),
                f"torchvision has no dataset class {self.name!r}; see torchvision.datasets")
        require(Path(self.root).exists(), f"dataset root {self.root} does not exist; set dataset.root")
        splits = {}
        for name in ("train", "test"):
            try:
                try:
                    dataset = cls(self.root, train=name == "train", download=False)
                except TypeError:
                    dataset = cls(self.root, split=name, download=False)
            except RuntimeError as error:
                raise AdvauditError(f"{self.name} is not at {self.root} ({error}); download it there "
                                    "yourself first: advaudit never downloads") from None
            splits[name] = _to_split(dataset, self.image_size, self.channels)
        classes = getattr(dataset, "classes", None) or [str(i) for i in range(int(splits["train"].y.max()) + 1)]
        return splits, [str(c) for c in classes]
