"""``dataset=shapes``: ShapeWorld images for training targets, m per instance, cached on disk.

Each training instance is rendered ``m`` times under uniformly random factors (the paper's
protocol, m = 10); items carry attributes ``instance`` and every factor value, so the bias options
(``drop_subgroup`` on a factor range, ``max_per_group`` per instance) apply, and ``factors``
restricts the training distribution itself (e.g. camera elevation in [-30, 30], Section 4.4).
Validation and test splits render held-out instances with the world's full factor bounds.

``fresh=True`` renders the training instances under *new* uniformly random conditions every
epoch (``m`` renders per instance per epoch), seeded by ``(seed, epoch)`` so a run is
reproducible; validation and test stay fixed. A target then sees a different sample of S each
epoch instead of the same ``m`` renders 40 times, which is what it takes for a CPU-sized ResNet
to be accurate under random conditions (m-limited training stays for the paper's Table 3).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from advaudit.core.progress import progress
from advaudit.data.base import ArrayDataModule
from advaudit.data.split import Split
from advaudit.errors import require
from advaudit.worlds.protocol import configure_factors, unit_to_factor, wrap_periodic
from advaudit.worlds.shapes import ShapeWorld

RENDER_CHUNK = 2000


class ShapesDataModule(ArrayDataModule):
    """Rendered ShapeWorld splits.

    Args:
        m: renders per training instance (validation / test instances get ``m_eval`` each).
        image_size, instances_per_class, world_seed, classes, shadows: the world (see ShapeWorld).
        factors: training-time factor bounds overrides (validation and test keep the world's).
        eval_factors: factor bounds overrides for validation and test (default: the world's full bounds).
        cache_dir: where rendered splits are cached (keyed by a hash of everything above).
        fresh: new random training conditions every epoch (seeded per epoch; see the module doc).
    """

    def __init__(self, m: int = 10, m_eval: int = 10, image_size: int = 32,
                 instances_per_class: Mapping[str, int] | None = None, world_seed: int = 0,
                 classes: list[str] | None = None, shadows: bool = True,
                 factors: Mapping[str, Any] | None = None, eval_factors: Mapping[str, Any] | None = None,
                 cache_dir: str | None = None, fresh: bool = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("val_fraction", 0.0)
        super().__init__(**kwargs)
        self._configure(ShapeWorld(image_size=image_size, instances_per_class=instances_per_class,
                                   seed=world_seed, classes=classes, shadows=shadows),
                        m, m_eval, factors, eval_factors, cache_dir, fresh)
        self.key = hashlib.sha256(json.dumps({
            "m": self.m, "m_eval": self.m_eval, "size": image_size, "counts": self.world.counts,
            "world_seed": world_seed, "classes": self.world.class_names, "shadows": shadows,
            "factors": [(f.name, f.low, f.high) for f in self.train_factors],
            "eval_factors": [(f.name, f.low, f.high) for f in self.eval_factors], "seed": self.seed,
            "fresh": self.fresh, "version": 1}, sort_keys=True).encode()).hexdigest()[:16]

    def _configure(self, world: Any, m: int, m_eval: int, factors: Mapping[str, Any] | None,
                   eval_factors: Mapping[str, Any] | None, cache_dir: str | None, fresh: bool) -> None:
        """Set the world and everything derived from it (shared with ``dataset=meshes``)."""
        require(m >= 1 and m_eval >= 1, f"m={m}, m_eval={m_eval}: renders per instance must be >= 1")
        self.m, self.m_eval = int(m), int(m_eval)
        self.world = world
        self.train_factors = configure_factors(world.factors, factors)
        self.eval_factors = configure_factors(world.factors, eval_factors)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.fresh = bool(fresh)
        require(not (self.fresh and (self.bias or self.limit.get("train") is not None)),
                "dataset.fresh=true re-renders the training split every epoch, so dataset.bias and "
                "dataset.limit.train (which edit one fixed training split) do not apply; restrict the "
                "training distribution with dataset.factors instead, or set dataset.fresh=false")

    def load_splits(self) -> tuple[dict[str, Split], list[str]]:
        path = self.cache_dir / f"shapes-{self.key}.pt" if self.cache_dir else None
        if path is not None and path.exists():
            stored = torch.load(path, weights_only=True)
            splits = {k: Split(v["x"].float().div_(255), v["y"], v["attributes"]) for k, v in stored.items()}
            return splits, self.world.class_names
        generator = torch.Generator().manual_seed(self.seed)
        if self.fresh:  # draw (and discard) the fixed split's conditions: val/test stay the same renders
            torch.rand(len(self.world.instances("train")), self.m, len(self.train_factors), generator=generator)
            train = self.render_epoch(0)
        else:
            train = self._render("train", self.m, self.train_factors, generator)
        splits = {"train": train,
                  "val": self._render("val", self.m_eval, self.eval_factors, generator),
                  "test": self._render("test", self.m_eval, self.eval_factors, generator)}
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            packed = {k: {"x": (v.x * 255).round().to(torch.uint8), "y": v.y, "attributes": v.attributes}
                      for k, v in splits.items()}
            torch.save(packed, path.with_suffix(".tmp"))
            path.with_suffix(".tmp").replace(path)
        return splits, self.world.class_names

    def render_epoch(self, epoch: int) -> Split:
        """The training split of ``epoch`` under ``fresh=True``: ``m`` new random renders per
        training instance, the same for the same ``(seed, epoch)``."""
        key = f"shapes-fresh/{self.seed}/{int(epoch)}".encode()
        generator = torch.Generator().manual_seed(int(hashlib.sha256(key).hexdigest()[:12], 16))
        return self._render("train", self.m, self.train_factors, generator, quiet=epoch > 0)

    def train_dataloader(self) -> DataLoader:
        if not self.fresh:
            return super().train_dataloader()
        dataset = FreshEpochs(self)
        return DataLoader(dataset, batch_size=self.batch_size, sampler=EpochSampler(dataset),
                          num_workers=self.num_workers, drop_last=False)

    def _render(self, split: str, m: int, factors: list, generator: torch.Generator,
                quiet: bool = False) -> Split:
        z = self.world.instances(split)
        # a training arc on a circle may cross the seam ([180, 450]: 180 deg through 0 to 90 deg)
        s = wrap_periodic(unit_to_factor(torch.rand(len(z), m, len(factors), generator=generator), factors),
                          self.world.factors)
        images = []
        per_chunk = max(1, RENDER_CHUNK // m)
        chunks = range(0, len(z), per_chunk)
        for start in (chunks if quiet else progress(chunks, desc=f"rendering shapes/{split}", unit="chunk")):
            index = torch.arange(start, min(start + per_chunk, len(z)))
            images.append(self.world.render(z.subset(index), s[index]).cpu())
        flat_s = s.reshape(len(z) * m, -1)
        attributes = {f.name: flat_s[:, i] for i, f in enumerate(factors)}
        attributes["instance"] = z.ids.cpu().repeat_interleave(m)
        x = torch.cat(images).mul_(255).round_().div_(255)  # 8-bit levels, as the on-disk cache
        return Split(x, z.labels.cpu().repeat_interleave(m), attributes)


class FreshEpochs(Dataset):
    """The training split of the current epoch (``(image [3, H, W], label)`` items), re-rendered by
    :meth:`set_epoch`; starts at the datamodule's epoch-0 split."""

    def __init__(self, datamodule: ShapesDataModule) -> None:
        self.datamodule = datamodule
        self.epoch = 0
        self.split = datamodule.split("train")

    def set_epoch(self, epoch: int) -> None:
        if int(epoch) != self.epoch:
            self.epoch, self.split = int(epoch), self.datamodule.render_epoch(int(epoch))

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        return self.split.x[index], self.split.y[index]


class EpochSampler(Sampler[int]):
    """Shuffles :class:`FreshEpochs` with a per-epoch seed; Lightning calls ``set_epoch`` at the
    start of every training epoch, which re-renders the dataset before it is iterated."""

    def __init__(self, dataset: FreshEpochs) -> None:
        self.dataset = dataset

    def set_epoch(self, epoch: int) -> None:
        self.dataset.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.dataset)

    def __iter__(self):
        seed = self.dataset.datamodule.seed * 100_003 + self.dataset.epoch
        return iter(torch.randperm(len(self.dataset), generator=torch.Generator().manual_seed(seed)).tolist())
