"""A class-conditional DCGAN generator whose early activations can be perturbed, and its critic.

The generator is a list of blocks (``blocks[i]`` maps the previous block's output to the next), so
"the outputs of the first k layers" is well defined: :meth:`ConditionalGenerator.forward` adds
``perturbations[i]`` to block ``i``'s output. Images come out in [0, 1], shaped ``[B, C, H, W]``
with ``H = W`` a multiple of 4 (28 for Fashion-MNIST, 32 for ShapeWorld).

The critic is a projection discriminator (Miyato & Koyama 2018) with spectral norm and an
auxiliary class head, trained with the hinge loss; both are plain ``nn.Module``s trained by
:class:`GANModule` (Lightning).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.nn.utils import spectral_norm

from advaudit.errors import AdvauditError
from advaudit.models.targets.formats.checkpoint import load_checkpoint, save_checkpoint
from advaudit.models.targets.formats.own import require_meta


def architecture(params: Mapping[str, Any]) -> dict[str, int]:
    """The :class:`ConditionalGenerator` keyword arguments that ``params`` names (a ``model`` config, a
    generator checkpoint's meta or a run's recorded config): ``latent_dim``, ``width`` and the trunk's
    ``trunk_layers`` (absent: 0, the DCGAN) and ``trunk_width`` (absent: 512)."""
    return {"latent_dim": int(params["latent_dim"]), "width": int(params["width"]),
            "trunk_layers": int(params.get("trunk_layers") or 0), "trunk_width": int(params.get("trunk_width") or 512)}


class ConditionalGenerator(nn.Module):
    """``(z [B, latent], y [B]) -> x [B, C, H, W]`` in [0, 1].

    Blocks: 0 = ``trunk_layers`` x (linear + ReLU to ``[trunk_width]``), then linear + BN + ReLU to
    ``[4*width, H/4, W/4]``; 1 = upsample + conv + BN + ReLU to ``[2*width, H/2, W/2]``; 2 = upsample +
    conv + BN + ReLU to ``[width, H, W]``; 3 = conv + sigmoid. The trunk (default none: the DCGAN) gives
    block 0 the depth to map a latent that *is* a scene description to a feature map
    (:mod:`advaudit.models.generators.rendered_generator`).
    """

    def __init__(self, num_classes: int, image_shape: Sequence[int], latent_dim: int = 64, width: int = 32,
                 trunk_layers: int = 0, trunk_width: int = 512) -> None:
        super().__init__()
        channels, height, _ = (int(d) for d in image_shape)
        if height % 4:
            raise ValueError(f"generator image size {height} must be a multiple of 4")
        self.num_classes, self.latent_dim = num_classes, latent_dim
        self.image_shape = (channels, height, height)
        self.base = height // 4
        self.embed = nn.Embedding(num_classes, latent_dim)
        trunk: list[nn.Module] = []
        for i in range(int(trunk_layers)):
            trunk += [nn.Linear(2 * latent_dim if i == 0 else trunk_width, trunk_width), nn.ReLU()]
        first_in = trunk_width if trunk_layers else 2 * latent_dim
        self.blocks = nn.ModuleList([
            nn.Sequential(*trunk, nn.Linear(first_in, 4 * width * self.base ** 2),
                          nn.Unflatten(1, (4 * width, self.base, self.base)), nn.BatchNorm2d(4 * width), nn.ReLU()),
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
    """``(x [B, C, H, W], y [B]) -> ([B] realness, [B, classes] class logits)``.

    A spectral-normalised DCGAN critic with a class projection (Miyato & Koyama 2018) and an
    auxiliary classification head (AC-GAN, Odena et al. 2017). The spatial features are flattened,
    not pooled, so the critic sees where strokes are: a pooled critic let the generator collapse to
    one image per class within a few epochs on Fashion-MNIST.
    """

    def __init__(self, num_classes: int, image_shape: Sequence[int], width: int = 32) -> None:
        super().__init__()
        channels, height = int(image_shape[0]), int(image_shape[1])
        features = 4 * width * (height // 4) ** 2
        self.features = nn.Sequential(
            spectral_norm(nn.Conv2d(channels, width, 4, 2, 1)), nn.LeakyReLU(0.2),
            spectral_norm(nn.Conv2d(width, 2 * width, 4, 2, 1)), nn.LeakyReLU(0.2),
            spectral_norm(nn.Conv2d(2 * width, 4 * width, 3, 1, 1)), nn.LeakyReLU(0.2),
            nn.Flatten(), spectral_norm(nn.Linear(features, 4 * width)), nn.LeakyReLU(0.2))
        self.linear = spectral_norm(nn.Linear(4 * width, 1))
        self.embed = spectral_norm(nn.Embedding(num_classes, 4 * width))
        self.classify = nn.Linear(4 * width, num_classes)

    def forward(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        h = self.features(x)
        return self.linear(h).squeeze(1) + (self.embed(y) * h).sum(1), self.classify(h)


def mode_seeking_loss(fake: Tensor, z: Tensor) -> Tensor:
    """MSGAN's regulariser (Mao et al. 2019) for pairs sharing a class: batch halves ``[2P, ...]``.

    Returns ``1 / (mean |G(z1) - G(z2)| / mean |z1 - z2|)``: small when different latents give
    different images, large when the generator ignores ``z`` (mode collapse).
    """
    half = len(fake) // 2
    image_gap = (fake[:half] - fake[half:2 * half]).abs().mean()
    latent_gap = (z[:half] - z[half:2 * half]).abs().mean()
    return 1.0 / (image_gap / latent_gap + 1e-5)


class GANModule(pl.LightningModule):
    """Hinge-loss conditional GAN with an auxiliary class loss and a mode-seeking term.

    Manual optimisation, one critic step then one generator step per batch. Fake images come in
    pairs of the same class with different latents (the batch's first half of labels, twice), so
    the mode-seeking term needs no extra generator pass.

    ``teacher`` (optional): a frozen classifier trained on the real images (``[B, C, H, W]`` in [0, 1]
    -> logits ``[B, K]``); the generator also minimises ``teacher_weight`` x its cross-entropy on the
    fakes' conditioning classes. For data whose classes the critic's own head learns slowly (ShapeWorld:
    0.26 of real test renders after 2,512 steps), it gives the class signal from the first step; but the
    generator may learn features only the teacher reads (ShapeWorld, 1,413 steps: the teacher gave 0.98
    of the samples their class, another real-render classifier 0.23), which is why the quality gate
    must use a different classifier. It is kept outside the module's registry: never trained, never
    switched to train mode, never saved.
    """

    def __init__(self, generator: ConditionalGenerator, critic: ProjectionCritic, lr: float = 2e-4,
                 class_weight: float = 1.0, diversity_weight: float = 1.0, teacher: nn.Module | None = None,
                 teacher_weight: float = 1.0) -> None:
        super().__init__()
        self.generator, self.critic, self.lr = generator, critic, lr
        self.class_weight, self.diversity_weight = class_weight, diversity_weight
        self._teacher = (teacher.eval().requires_grad_(False),) if teacher is not None else ()
        self.teacher_weight = teacher_weight
        self.automatic_optimization = False

    def _teacher_loss(self, fake: Tensor, y: Tensor) -> Tensor:
        """The frozen teacher's cross-entropy on ``fake`` ``[B, C, H, W]`` for classes ``y`` ``[B]`` (0 without one)."""
        if not self._teacher:
            return fake.new_zeros(())
        teacher = self._teacher[0]
        if next(teacher.parameters()).device != fake.device:
            teacher.to(fake.device)
        return nn.functional.cross_entropy(teacher(fake), y)

    def training_step(self, batch: tuple[Tensor, Tensor], _: int) -> None:
        x, y = batch
        opt_g, opt_d = self.optimizers()
        half = len(y) // 2
        y_fake = torch.cat([y[:half], y[:half]])
        z = torch.randn(len(y_fake), self.generator.latent_dim, device=x.device)
        fake = self.generator(z, y_fake)
        real_score, real_logits = self.critic(x, y)
        fake_score, _ = self.critic(fake.detach(), y_fake)
        d_adv = torch.relu(1 - real_score).mean() + torch.relu(1 + fake_score).mean()
        d_class = nn.functional.cross_entropy(real_logits, y)
        opt_d.zero_grad()
        self.manual_backward(d_adv + self.class_weight * d_class)
        opt_d.step()
        fake_score, fake_logits = self.critic(fake, y_fake)
        g_adv = -fake_score.mean()
        g_class = nn.functional.cross_entropy(fake_logits, y_fake)
        diversity = mode_seeking_loss(fake, z)
        g_teacher = self._teacher_loss(fake, y_fake)
        opt_g.zero_grad()
        self.manual_backward(g_adv + self.class_weight * g_class + self.diversity_weight * diversity
                             + self.teacher_weight * g_teacher)
        opt_g.step()
        self.log_dict({"gan/d_loss": d_adv, "gan/g_loss": g_adv, "gan/d_class": d_class, "gan/g_class": g_class,
                       "gan/mode_seeking": diversity, "gan/g_teacher": g_teacher}, prog_bar=True)

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        betas = (0.5, 0.999)
        return [torch.optim.Adam(self.generator.parameters(), lr=self.lr, betas=betas),
                torch.optim.Adam(self.critic.parameters(), lr=self.lr, betas=betas)]


def save_generator(generator: ConditionalGenerator, meta: dict[str, Any], path: str | Path,
                   extra: dict[str, Any] | None = None) -> Path:
    """Write a generator checkpoint (weights + ``meta``: class names, image shape, latent dim, width)."""
    state = {k: v.detach().cpu() for k, v in generator.state_dict().items()}
    return save_checkpoint(path, {"kind": "generator", "meta": meta, "state_dict": state, **(extra or {})})


def load_generator(path: str | Path, map_location: str = "cpu") -> tuple[ConditionalGenerator, dict[str, Any]]:
    """Rebuild the generator stored at ``path`` (safe loading), in eval mode; returns it and its meta."""
    payload = load_checkpoint(path, kind="generator", map_location=map_location)
    meta = require_meta(payload, path, ("class_names", "image_shape", "latent_dim", "width"))
    generator = ConditionalGenerator(len(meta["class_names"]), meta["image_shape"], **architecture(meta))
    try:
        generator.load_state_dict(payload["state_dict"])
    except RuntimeError as error:
        raise AdvauditError(f"weights in {path} do not match the generator described by its meta: "
                            f"{str(error).splitlines()[0]}") from None
    return generator.to(map_location).eval(), meta
