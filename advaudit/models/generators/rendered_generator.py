"""A conditional generator taught by the world's renderer instead of a critic (``model.objective=rendered``).

On a world whose scenes are drawn from unit numbers (ShapeWorld: an instance's 11 numbers, then one per
rendering factor, :meth:`~advaudit.worlds.shapes.world.ShapeWorld.scenes_from_units`), a generator
``g(z, y)`` with ``z ~ N(0, I)`` can be fitted to *be* the world. The first ``D = world.scene_units``
latent coordinates name a scene through the standard normal CDF, ``u = Phi(z[:D])`` (uniform on
``[0, 1]^D``, the world's own distribution of instances and conditions), the world renders ``(u, y)``,
and ``g`` is fitted to that render:

    loss = mean_pixels( (1 + object_weight * mask) * |g(z, y) - render(Phi(z[:D]), y)| )

with ``mask`` the object's pixels (objects cover a small part of a 32-px render, so an unweighted loss
is mostly background). Every batch is a fresh draw of instances and conditions (no instance is seen
twice), so ``g``'s samples are new objects of the class under conditions of the training box.

Why: the fault-test paper (Sec. 5, "Threats") says its method "does not explicitly require a GAN, and
could easily use a VAE or other generative model", and that realism is not required "as long as a class
is recognisable"; its related work names generators trained on "a dataset with labelled attributes".
A GAN trained on ShapeWorld renders on one CPU core stayed below its quality gate (docs/results/fault_tests/fault-tests-3d.md); a
generator supervised by the renderer (as Dosovitskiy et al. 2015 generate chairs from class and view)
learns the world's scenes from a regression. Its early activations hold what the scene description
holds (shape proportions, colour, pose, lights), which the fault-test walk perturbs; the remaining
``latent_dim - D`` latent coordinates are unused (the walk may still move them). The quality gate is the
same: class agreement of its samples by a classifier trained on real renders.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from advaudit.errors import require
from advaudit.models.generators.generator import ConditionalGenerator


# scenes rendered per call of the world (bounds the renderer's memory)
RENDER_CHUNK = 2048


def scene_units(z: Tensor, units: int) -> Tensor:
    """``u = Phi(z[:, :units])`` ``[B, units]`` in (0, 1): the scene a latent ``z`` ``[B, L]`` names."""
    return torch.special.ndtr(z[:, :units])


class RenderedScenes(Dataset):
    """``steps`` batches per epoch, each ``(z [B, L], y [B], x [B, C, H, W], mask [B, H, W])``: latents,
    balanced classes, the world's renders of the scenes the latents name, and the object masks.

    An epoch's scenes are rendered together on its first batch (the world renders a class's scenes in
    one call, so many small batches would be several times slower) and are the same for the same
    ``(seed, epoch)``: a rerun resumes from its epoch on the same data. The epoch is set by
    :class:`EpochOfScenes`.
    """

    def __init__(self, world: Any, factors: list, latent_dim: int, batch_size: int, steps: int, seed: int) -> None:
        # an optional world feature (worlds.protocol.OPTIONAL), asked directly: models/ sits below worlds/
        require(hasattr(world, "scenes_from_units"), f"model.objective=rendered needs a world that draws scenes "
                f"from unit numbers (dataset=shapes); {type(world).__name__} does not: use model.objective=adversarial")
        require(latent_dim >= world.scene_units, f"model.latent_dim={latent_dim}: the rendered objective names a "
                f"scene with the first {world.scene_units} latent coordinates; set model.latent_dim>={world.scene_units}")
        require(steps >= 1 and batch_size >= 2, f"model.steps_per_epoch={steps} and dataset.batch_size={batch_size} "
                "must be >= 1 and >= 2")
        self.world, self.factors, self.latent_dim = world, factors, int(latent_dim)
        self.batch_size, self.steps, self.seed, self.epoch = int(batch_size), int(steps), int(seed), 0
        self._rendered: tuple[int, tuple[Tensor, ...]] | None = None

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        if self._rendered is None or self._rendered[0] != self.epoch:
            self._rendered = (self.epoch, self.render_epoch(self.epoch))
        rows = slice(int(index) * self.batch_size, (int(index) + 1) * self.batch_size)
        return tuple(t[rows] for t in self._rendered[1])  # type: ignore[return-value]

    def render_epoch(self, epoch: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(z, y, x, mask)`` of all ``steps * batch_size`` scenes of ``epoch``; every batch is balanced
        over the classes (in a shuffled order)."""
        key = f"rendered-scenes/{self.seed}/{int(epoch)}".encode()
        g = torch.Generator().manual_seed(int(hashlib.sha256(key).hexdigest()[:12], 16))
        k, n = len(self.world.class_names), self.steps * self.batch_size
        y = torch.cat([(torch.arange(self.batch_size) % k)[torch.randperm(self.batch_size, generator=g)]
                       for _ in range(self.steps)])
        z = torch.randn(n, self.latent_dim, generator=g)
        instances, s = self.world.scenes_from_units(scene_units(z, self.world.scene_units), y, self.factors)
        images, masks = [], []
        for start in range(0, n, RENDER_CHUNK):
            chunk = torch.arange(start, min(start + RENDER_CHUNK, n), device=s.device)
            x, mask = self.world.render_with_masks(instances.subset(chunk), s[chunk])
            images.append(x.cpu().mul_(255).round_().div_(255))  # 8-bit levels, as the datasets' renders
            masks.append(mask.cpu())
        return z, y, torch.cat(images), torch.cat(masks)


class EpochOfScenes(Sampler[int]):
    """The batch indices of an epoch, in order; Lightning's ``set_epoch`` selects the epoch's scenes."""

    def __init__(self, scenes: RenderedScenes) -> None:
        self.scenes = scenes

    def set_epoch(self, epoch: int) -> None:
        self.scenes.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.scenes)

    def __iter__(self):
        return iter(range(len(self.scenes)))


def rendered_scenes_loader(scenes: RenderedScenes) -> DataLoader:
    """A loader of whole rendered batches (``batch_size=None``: the dataset makes the batches)."""
    return DataLoader(scenes, batch_size=None, sampler=EpochOfScenes(scenes))


class RenderedGeneratorModule(pl.LightningModule):
    """Fits ``generator`` to the world's renders of the scenes its latents name (module docstring)."""

    def __init__(self, generator: ConditionalGenerator, lr: float = 1e-3, object_weight: float = 4.0) -> None:
        super().__init__()
        require(object_weight >= 0, f"model.object_weight={object_weight} must be >= 0")
        self.generator, self.lr, self.object_weight = generator, float(lr), float(object_weight)

    def render_loss(self, z: Tensor, y: Tensor, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``(weighted L1, plain L1)`` of ``g(z, y)`` against the renders ``x`` ``[B, C, H, W]``."""
        error = (self.generator(z, y) - x).abs().mean(1)  # [B, H, W]
        weight = 1.0 + self.object_weight * mask.to(error.dtype)
        return (weight * error).mean(), error.mean()

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor, Tensor], _: int) -> Tensor:
        loss, l1 = self.render_loss(*batch)
        self.log_dict({"generator/render_loss": loss, "generator/render_l1": l1}, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.generator.parameters(), lr=self.lr)


__all__ = ["RenderedGeneratorModule", "RenderedScenes", "rendered_scenes_loader", "scene_units"]
