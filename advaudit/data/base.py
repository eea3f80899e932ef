"""The datamodule every dataset shares: splits held in memory as tensors.

Subclasses implement :meth:`ArrayDataModule.load_splits`; this base carves a seeded validation
split, applies optional subsetting and bias injection (training split only, except test-time
shifts), and computes the normalisation that the target model stores with its weights. It has the loaders of
a LightningDataModule without being one: training hands it to Lightning through an adapter
(:mod:`advaudit.models.training.classifier_training`), and an audit, which only reads data, does not import
Lightning (~3 s a process, which every shard of a split audit pays: docs/scaling-out.md).
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from advaudit.config.ranges import require_within
from advaudit.data.bias import apply_bias, apply_test_shift
from advaudit.data.settings import DatasetConf
from advaudit.data.split import Split, class_index
from advaudit.errors import require


#: the settings' defaults (:class:`~advaudit.data.settings.DatasetConf`, their one declaration)
_SETTINGS = DatasetConf()


class ArrayDataModule:
    """Dataset splits as in-memory tensors, served by plain ``DataLoader``s.

    Args:
        batch_size: training batch size; evaluation uses ``4 * batch_size``.
        val_fraction: share of the training split held out for validation (when the source
            has no validation split of its own); the carve is seeded.
        seed: seed for the validation carve and any subsetting.
        limit: optional ``{split: max_items}`` cap (seeded random subset) for quick runs and tests.
        classes: optional list of class names or indices to keep; labels are renumbered 0..k-1.
        bias: bias-injection options (see :mod:`advaudit.data.bias`).
    """

    kind: str = "image"

    def __init__(
        self,
        batch_size: int = _SETTINGS.batch_size,
        val_fraction: float = _SETTINGS.val_fraction,
        seed: int = _SETTINGS.seed,
        limit: Mapping[str, int] | None = None,
        classes: list[Any] | None = None,
        bias: Mapping[str, Any] | None = None,
        num_workers: int = _SETTINGS.num_workers,
    ) -> None:
        require_within(DatasetConf, "val_fraction", val_fraction, "val_fraction")
        self.batch_size = int(batch_size)
        self.val_fraction = float(val_fraction)
        self.seed = int(seed)
        self.limit = dict(limit or {})
        self.classes = list(classes) if classes else None
        self.bias = dict(bias or {})
        self.num_workers = int(num_workers)
        self.splits: dict[str, Split] = {}
        self._class_names: list[str] = []

    # -- to implement -------------------------------------------------------------------------
    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        """Return ``({"train": ..., "test": ..., optionally "val": ...}, class_names)``."""
        raise NotImplementedError

    # -- lifecycle ------------------------------------------------------------------------------
    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        splits, names = self.load_splits()
        generator = torch.Generator().manual_seed(self.seed)
        if "val" not in splits:
            splits["train"], splits["val"] = _carve(splits["train"], self.val_fraction, generator)
        if self.classes is not None:
            splits, names = _select_classes(splits, names, self.classes)
        for name, cap in self.limit.items():
            require(name in splits, f"limit names split {name!r}; splits are {sorted(splits)}")
            if cap is not None and len(splits[name]) > cap:
                index = torch.randperm(len(splits[name]), generator=generator)[: int(cap)]
                splits[name] = splits[name].subset(index.sort().values)
        self._class_names = list(names)
        splits["train"] = apply_bias(splits["train"], self.bias, self._class_names, self.seed)
        splits["test"] = apply_test_shift(splits["test"], self.bias)
        self.splits = splits

    def split(self, name: str) -> Split:
        """The split ``name`` (``train``, ``val`` or ``test``), setting up on first use."""
        self.setup()
        require(name in self.splits, f"unknown split {name!r}; use one of {sorted(self.splits)}")
        return self.splits[name]

    # -- what a target model needs to know -------------------------------------------------------
    @property
    def class_names(self) -> list[str]:
        self.setup()
        return self._class_names

    @property
    def num_classes(self) -> int:
        self.setup()
        return len(self.class_names)

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input: ``(C, H, W)`` for images, ``(F,)`` for tables."""
        return tuple(self.split("train").x.shape[1:])

    def normalization(self) -> dict[str, list[float]]:
        """Per-channel (images) or per-feature (tables) mean and std of the training split."""
        x = self.split("train").x.double()
        dims = [0, 2, 3] if x.dim() == 4 else [0]
        std = x.std(dim=dims).clamp_min(1e-6)
        return {"mean": x.mean(dim=dims).tolist(), "std": std.tolist()}

    def describe(self) -> dict[str, Any]:
        """Plain-data summary stored in checkpoints and results."""
        self.setup()
        return {
            "name": type(self).__name__,
            "kind": self.kind,
            "class_names": self.class_names,
            "input_shape": list(self.input_shape),
            "sizes": {k: len(v) for k, v in self.splits.items()},
        }

    # -- loaders ---------------------------------------------------------------------------------
    def _loader(self, name: str, shuffle: bool) -> DataLoader:
        split = self.split(name)
        batch = self.batch_size if shuffle else 4 * self.batch_size
        return DataLoader(TensorDataset(split.x, split.y), batch_size=batch, shuffle=shuffle,
                          num_workers=self.num_workers, drop_last=False)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)


def _carve(split: Split, fraction: float, generator: torch.Generator) -> tuple[Split, Split]:
    """Seeded random split of ``split`` into (rest, held-out ``fraction``)."""
    order = torch.randperm(len(split), generator=generator)
    n_val = int(round(fraction * len(split)))
    return split.subset(order[n_val:].sort().values), split.subset(order[:n_val].sort().values)


def _select_classes(
    splits: dict[str, Split], names: list[str], classes: list[Any]
) -> tuple[dict[str, Split], list[str]]:
    """Keep only ``classes`` and renumber labels in the given order."""
    keep = [class_index(c, names) for c in classes]
    remap = torch.full((len(names),), -1, dtype=torch.long)
    remap[torch.tensor(keep)] = torch.arange(len(keep))
    out = {}
    for key, split in splits.items():
        sub = split.subset(remap[split.y] >= 0)
        out[key] = Split(sub.x, remap[sub.y], sub.attributes)
    return out, [names[i] for i in keep]


def as_float_images(x: Tensor) -> Tensor:
    """uint8 ``[N, H, W]`` / ``[N, C, H, W]`` (or float) images -> float32 ``[N, C, H, W]`` in [0, 1]."""
    if x.dim() == 3:
        x = x.unsqueeze(1)
    if x.dtype == torch.uint8:
        return x.float().div_(255.0)
    return x.float()
