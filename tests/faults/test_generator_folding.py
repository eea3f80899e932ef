"""The folded generator (BatchNorm folded, upsample + conv as one transposed conv) is the same function."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from advaudit.models.generators.generator import ConditionalGenerator
from advaudit.models.generators.generator_folding import FoldedGenerator, can_fold, folded


def generator_with_trained_statistics(size: int, seed: int = 0, trunk_layers: int = 0) -> ConditionalGenerator:
    """A generator whose BatchNorms have non-trivial running statistics and affine weights (eval mode)."""
    torch.manual_seed(seed)
    generator = ConditionalGenerator(3, (1, size, size), latent_dim=16, width=8, trunk_layers=trunk_layers,
                                     trunk_width=24)
    for module in generator.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.3, 3)
            nn.init.uniform_(module.weight, 0.5, 1.5)
            nn.init.uniform_(module.bias, -0.5, 0.5)
    return generator.eval()


@pytest.mark.parametrize("size, trunk_layers", [(12, 0), (28, 0), (12, 2)])
def test_folded_generator_matches_activations_images_and_perturbed_images(size: int, trunk_layers: int) -> None:
    generator = generator_with_trained_statistics(size, trunk_layers=trunk_layers)
    assert len(generator.blocks[0]) == 4 + 2 * trunk_layers
    fast = FoldedGenerator(generator)
    z, y = torch.randn(7, 16), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    with torch.no_grad():
        plain_acts, fast_acts = generator.activations(z, y, 3), fast.activations(z, y, 3)
        for a, b in zip(plain_acts, fast_acts):
            assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)
        perturbations = [torch.randn_like(a) for a in plain_acts[:2]]
        assert torch.allclose(generator(z, y, perturbations), fast(z, y, perturbations), atol=1e-5)
        # a perturbation of block 1 alone changes the image: it is added where the plain generator adds it
        only_second = [torch.zeros_like(plain_acts[0]), perturbations[1]]
        assert torch.allclose(generator(z, y, only_second), fast(z, y, only_second), atol=1e-5)
        assert not torch.allclose(fast(z, y, only_second), fast(z, y), atol=1e-3)
    assert not any(p.requires_grad for p in fast.parameters())


def test_folding_is_skipped_for_layouts_it_does_not_know() -> None:
    generator = generator_with_trained_statistics(12)
    assert can_fold(generator) and isinstance(folded(generator), FoldedGenerator)
    generator.blocks[1][0] = nn.Upsample(scale_factor=2, mode="bilinear")  # not a nearest upsample
    assert not can_fold(generator) and folded(generator) is generator
    other = nn.Linear(3, 3)
    assert folded(other) is other
