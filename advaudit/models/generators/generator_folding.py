"""An inference copy of a :class:`~advaudit.models.generators.generator.ConditionalGenerator` with the same
function and fewer operations, for the fault-test walk (thousands of forward and backward passes).

Two exact rewrites, valid in eval mode (BatchNorm uses its running statistics):

* **BatchNorm folded** into the preceding linear or convolution: ``BN(Wx + b) = (sW)x + s(b - mu) + beta``
  with ``s = gamma / sqrt(var + eps)`` per channel.
* **Nearest 2x upsampling followed by a 3x3 convolution (padding 1) as one stride-2 transposed
  convolution** with a 4x4 kernel (padding 1). Output row ``2i + a`` of the upsample-then-convolve
  reads low-resolution rows ``i - 1, i`` (``a = 0``) or ``i, i + 1`` (``a = 1``), with the 3x3 kernel's
  rows ``W[0] | W[1] + W[2]`` and ``W[0] + W[1] | W[2]`` respectively; along each axis the transposed
  kernel is ``K = [W[2], W[1] + W[2], W[0] + W[1], W[0]]``. The high-resolution convolution costs
  ``36 H W C_in C_out`` multiply-adds, the transposed one ``16 H W C_in C_out`` (2.25x fewer), and the
  upsampled copy of the activations is never made.

Activation shapes, block boundaries (where the walk adds its perturbations) and outputs are those
of the original; ``tests/faults/test_generator_folding.py`` checks equality to float precision.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from advaudit.models.generators.generator import ConditionalGenerator


def _bn_scale_shift(bn: nn.BatchNorm2d) -> tuple[Tensor, Tensor]:
    """Per-channel ``(scale, shift)`` ``[C]`` with ``bn(h) = scale * h + shift`` in eval mode."""
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    return scale, bn.bias - bn.running_mean * scale


def _upsample_conv_kernel(weight: Tensor) -> Tensor:
    """A 3x3 conv weight ``[C_out, C_in, 3, 3]`` -> the equivalent stride-2 transposed-conv weight
    ``[C_in, C_out, 4, 4]`` (for nearest 2x upsampling, then the conv with padding 1)."""
    # 1-D map from the 3 conv taps to the 4 transposed taps: K = [W2, W1 + W2, W0 + W1, W0]
    mix = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
                       dtype=weight.dtype, device=weight.device)
    kernel = torch.einsum("ri,cdij,sj->cdrs", mix, weight, mix)
    return kernel.transpose(0, 1).contiguous()


class FoldedGenerator(nn.Module):
    """The same ``(z, y, perturbations) -> x`` as the generator it was built from, for eval mode only.

    Blocks: 0 = the trunk (unchanged), linear (BN folded) + unflatten + ReLU; 1, 2 = stride-2 transposed conv (upsample,
    conv and BN folded) + ReLU; 3 = conv + sigmoid. Perturbation ``i`` is added to block ``i``'s output.
    """

    def __init__(self, generator: ConditionalGenerator) -> None:
        super().__init__()
        self.num_classes, self.latent_dim = generator.num_classes, generator.latent_dim
        self.image_shape, self.base = generator.image_shape, generator.base
        self.embed = generator.embed
        with torch.no_grad():
            blocks: list[nn.Module] = [self._fold_linear_block(generator.blocks[0])]
            blocks += [self._fold_upsample_block(block) for block in list(generator.blocks)[1:-1]]
        self.blocks = nn.ModuleList(blocks + [generator.blocks[-1]])
        self.requires_grad_(False)
        self.eval()

    @staticmethod
    def _fold_linear_block(block: nn.Sequential) -> nn.Sequential:
        *trunk, linear, unflatten, bn, relu = block
        scale, shift = _bn_scale_shift(bn)
        per_row = unflatten.unflattened_size[1] * unflatten.unflattened_size[2]  # rows are channel-major
        folded = nn.Linear(linear.in_features, linear.out_features).to(linear.weight)
        folded.weight.copy_(linear.weight * scale.repeat_interleave(per_row)[:, None])
        folded.bias.copy_(linear.bias * scale.repeat_interleave(per_row) + shift.repeat_interleave(per_row))
        return nn.Sequential(*trunk, folded, unflatten, relu)

    @staticmethod
    def _fold_upsample_block(block: nn.Sequential) -> nn.Sequential:
        upsample, conv, bn, relu = block
        scale, shift = _bn_scale_shift(bn)
        transposed = nn.ConvTranspose2d(conv.in_channels, conv.out_channels, 4, stride=2, padding=1).to(conv.weight)
        transposed.weight.copy_(_upsample_conv_kernel(conv.weight * scale[:, None, None, None]))
        transposed.bias.copy_(conv.bias * scale + shift)
        return nn.Sequential(transposed, relu)

    forward = ConditionalGenerator.forward
    activations = ConditionalGenerator.activations
    sample_latent = ConditionalGenerator.sample_latent


def can_fold(generator: nn.Module) -> bool:
    """True when ``generator`` has the block layout :class:`FoldedGenerator` rewrites."""
    if not isinstance(generator, ConditionalGenerator):
        return False
    hidden = list(generator.blocks)[1:-1]
    first = list(generator.blocks[0])
    return (len(first) >= 4 and isinstance(first[-4], nn.Linear) and isinstance(first[-2], nn.BatchNorm2d)
            and all(len(b) == 4 and isinstance(b[0], nn.Upsample) and b[0].scale_factor in (2, 2.0)
                    and b[0].mode == "nearest" and isinstance(b[1], nn.Conv2d) and b[1].kernel_size == (3, 3)
                    and b[1].padding == (1, 1) and b[1].stride == (1, 1) and isinstance(b[2], nn.BatchNorm2d)
                    for b in hidden))


def folded(generator: nn.Module) -> nn.Module:
    """A :class:`FoldedGenerator` of ``generator`` when its layout allows, else ``generator`` itself."""
    return FoldedGenerator(generator) if can_fold(generator) else generator

