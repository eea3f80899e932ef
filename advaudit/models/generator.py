"""A class-conditional DCGAN generator whose early activations can be perturbed, and its critic.

The generator is a list of blocks (``blocks[i]`` maps the previous block's output to the next), so
"the outputs of the first k layers" is well defined: :meth:`ConditionalGenerator.forward` adds
``perturbations[i]`` to block ``i``'s output. Images come out in [0, 1], shaped ``[B, C, H, W]``
with ``H = W`` a multiple of 4 (28 for Fashion-MNIST, 32 for ShapeWorld).

The critic is a projection discriminator (Miyato & Koyama 2018) with spectral norm, trained with
the hinge loss; both are plain ``nn.Module``s trained by :class:`GANModule` (Lightning).
"""

from __future__ import annotations

from typing import Sequence

import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.nn.utils import spectral_norm


class ConditionalGenerator(nn.Module):
    """``(z [B, latent], y [B]) -> x [B, C, H, W]`` in [0, 1].

    Blocks: 0 = linear + BN + ReLU to ``[4*width, H/4, W/4]``; 1 = upsample + conv + BN + ReLU to
    ``[2*width, H/2, W/2]``; 2 = upsample + conv + BN + ReLU to ``[width, H, W]``; 3 = conv + sigmoid.
    """

    def __init__(self, num_classes: int, image_shape: Sequence[int], latent_dim: int = 64, width: int = 32) -> None:
        super().__init__()
        channels, height, _ = (int(d) for d in image_shape)
        if height % 4:
            raise ValueError(f"generator image size {height} must be a multiple of 4")
        self.num_classes, self.latent_dim = num_classes, latent_dim
        self.image_shape = (channels, height, height)
        self.base = height // 4
        self.embed = nn.Embedding(num_classes, latent_dim)
        self.blocks = nn.ModuleList([
            nn.Sequential(nn.Linear(2 * latent_dim, 4 * width * self.base ** 2), nn.Unflatten(1, (4 * width, self.base, self.base)),
                          nn.BatchNorm2d(4 * width), nn.ReLU()),
            nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4 * width, 2 * width, 3, padding=1),
                          nn.BatchNorm2d(2 * width), nn.ReLU()),
            nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(2 * width, width, 3, padding=1),
                          nn.BatchNorm2d(width), nn.ReLU()),
            nn.Sequential(nn.Conv2d(width, channels, 3, padding=1), nn.Sigmoid()),
        ])

    def forward(self, z: Tensor, y: Tensor, perturbations: Sequence[Tensor] | None = None) -> Tensor:
        """Images ``[B, C, H, W]``; ``perturbations[i]`` (shaped like block ``i``'s output) is added to it."""
        h = torch.cat([z, self.embed(y)], 1)
        for i, block in enumerate(self.blocks):
            h = block(h)
            if perturbations is not None and i < len(perturbations):
                h = h + perturbations[i]
        return h

    def activations(self, z: Tensor, y: Tensor, k: int) -> list[Tensor]:
        """Outputs of the first ``k`` blocks (no perturbation), each ``[B, ...]``."""
        h, outs = torch.cat([z, self.embed(y)], 1), []
        for block in list(self.blocks)[:k]:
            h = block(h)
            outs.append(h)
        return outs

    def sample_latent(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        return torch.randn(n, self.latent_dim, generator=generator)


class ProjectionCritic(nn.Module):
    """``(x [B, C, H, W], y [B]) -> [B]`` realness score, spectral-normalised, with class projection."""

    def __init__(self, num_classes: int, image_shape: Sequence[int], width: int = 32) -> None:
        super().__init__()
        channels = int(image_shape[0])
        self.features = nn.Sequential(
            spectral_norm(nn.Conv2d(channels, width, 4, 2, 1)), nn.LeakyReLU(0.2),
            spectral_norm(nn.Conv2d(width, 2 * width, 4, 2, 1)), nn.LeakyReLU(0.2),
            spectral_norm(nn.Conv2d(2 * width, 4 * width, 3, 1, 1)), nn.LeakyReLU(0.2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.linear = spectral_norm(nn.Linear(4 * width, 1))
        self.embed = spectral_norm(nn.Embedding(num_classes, 4 * width))

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        h = self.features(x)
        return self.linear(h).squeeze(1) + (self.embed(y) * h).sum(1)


class GANModule(pl.LightningModule):
    """Hinge-loss conditional GAN training (manual optimisation: one critic step, one generator step)."""

    def __init__(self, generator: ConditionalGenerator, critic: ProjectionCritic, lr: float = 2e-4) -> None:
        super().__init__()
        self.generator, self.critic, self.lr = generator, critic, lr
        self.automatic_optimization = False

    def training_step(self, batch: tuple[Tensor, Tensor], _: int) -> None:
        x, y = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(len(x), self.generator.latent_dim, device=x.device)
        fake = self.generator(z, y)
        d_loss = torch.relu(1 - self.critic(x, y)).mean() + torch.relu(1 + self.critic(fake.detach(), y)).mean()
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        g_loss = -self.critic(fake, y).mean()
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.log_dict({"gan/d_loss": d_loss, "gan/g_loss": g_loss}, prog_bar=True)

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        betas = (0.0, 0.9)
        return [torch.optim.Adam(self.generator.parameters(), lr=self.lr, betas=betas),
                torch.optim.Adam(self.critic.parameters(), lr=self.lr, betas=betas)]
