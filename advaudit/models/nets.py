"""Network architectures for target classifiers, built by name from plain config.

Checkpoints store ``arch`` and ``arch_params`` as plain data; rebuilding goes through this
registry only (never an import path from the file), so loading a checkpoint cannot run code.
Every net takes *normalised* input ``[B, *input_shape]`` and returns logits ``[B, num_classes]``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn

from advaudit.errors import AdvauditError, require

ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {}


def register_architecture(name: str) -> Callable:
    """Class/function decorator adding a builder ``(input_shape, num_classes, **params)``."""

    def add(builder: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        ARCHITECTURES[name] = builder
        return builder

    return add


def build_net(arch: str, input_shape: Sequence[int], num_classes: int, **params) -> nn.Module:
    """Build architecture ``arch`` for inputs ``input_shape`` and ``num_classes`` outputs."""
    if arch not in ARCHITECTURES:
        raise AdvauditError(f"unknown architecture {arch!r}; use one of {sorted(ARCHITECTURES)}")
    try:
        return ARCHITECTURES[arch](tuple(input_shape), int(num_classes), **params)
    except TypeError as error:
        raise AdvauditError(f"bad parameters for architecture {arch!r}: {error}") from None


def _image_shape(input_shape: tuple[int, ...], arch: str) -> tuple[int, int, int]:
    require(len(input_shape) == 3, f"{arch} needs image input [C, H, W], got {list(input_shape)}; "
            "use model=mlp (or svm/logreg) for tables")
    return input_shape  # type: ignore[return-value]


@register_architecture("cnn")
class SmallCNN(nn.Module):
    """Two conv blocks (conv-BN-ReLU x2, max-pool) and a dropout MLP head; fast on CPU."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int,
                 channels: Sequence[int] = (32, 64), hidden: int = 128, dropout: float = 0.25) -> None:
        super().__init__()
        c, h, w = _image_shape(input_shape, "cnn")
        layers: list[nn.Module] = []
        for out in channels:
            layers += [nn.Conv2d(c, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU(inplace=True),
                       nn.Conv2d(out, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU(inplace=True),
                       nn.MaxPool2d(2)]
            c, h, w = out, h // 2, w // 2
        require(h >= 1 and w >= 1, f"input {list(input_shape)} is too small for {len(channels)} pooling stages")
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(c * h * w, hidden),
                                  nn.ReLU(inplace=True), nn.Dropout(dropout), nn.Linear(hidden, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _small_input_resnet(depth: int, input_shape: tuple[int, ...], num_classes: int,
                        width: int = 64) -> nn.Module:
    """torchvision ResNet adapted to small inputs: 3x3 stride-1 stem, no max-pool, any channels."""
    c, _, _ = _image_shape(input_shape, f"resnet{depth}")
    layers = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}[depth]
    net = _scaled_resnet(layers, num_classes, width)
    net.conv1 = nn.Conv2d(c, net.bn1.num_features, 3, stride=1, padding=1, bias=False)
    net.maxpool = nn.Identity()
    return net


def _scaled_resnet(layers: list[int], num_classes: int, width: int) -> nn.Module:
    """torchvision's ResNet with ``width`` planes in the first stage (64 = the standard net)."""
    from torchvision.models.resnet import BasicBlock, ResNet  # torchvision is slow to import; only this path needs it

    class ScaledResNet(ResNet):
        def __init__(self) -> None:
            nn.Module.__init__(self)
            self._norm_layer = nn.BatchNorm2d
            self.inplanes, self.dilation, self.groups, self.base_width = width, 1, 1, 64
            self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(width), nn.ReLU(inplace=True)
            self.maxpool = nn.Identity()
            self.layer1 = self._make_layer(BasicBlock, width, layers[0])
            self.layer2 = self._make_layer(BasicBlock, width * 2, layers[1], stride=2)
            self.layer3 = self._make_layer(BasicBlock, width * 4, layers[2], stride=2)
            self.layer4 = self._make_layer(BasicBlock, width * 8, layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(width * 8, num_classes)

    return ScaledResNet()


@register_architecture("resnet18")
def resnet18(input_shape: tuple[int, ...], num_classes: int, width: int = 64) -> nn.Module:
    """ResNet-18 (no pretrained weights) for small images; ``width`` scales every stage."""
    return _small_input_resnet(18, input_shape, num_classes, width)


@register_architecture("resnet34")
def resnet34(input_shape: tuple[int, ...], num_classes: int, width: int = 64) -> nn.Module:
    """ResNet-34 (no pretrained weights) for small images; ``width`` scales every stage."""
    return _small_input_resnet(34, input_shape, num_classes, width)


@register_architecture("alexnet")
class SmallAlexNet(nn.Module):
    """AlexNet's layer pattern (5 conv, 3 FC with dropout) scaled to 28-64 px inputs."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, width: int = 64,
                 hidden: int = 512, dropout: float = 0.5) -> None:
        super().__init__()
        c, h, w = _image_shape(input_shape, "alexnet")
        k = width
        self.features = nn.Sequential(
            nn.Conv2d(c, k, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(k, 3 * k, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(3 * k, 6 * k, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(6 * k, 4 * k, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(4 * k, 4 * k, 3, padding=1), nn.ReLU(inplace=True),
            nn.AdaptiveMaxPool2d((3, 3)),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(dropout), nn.Linear(4 * k * 9, hidden), nn.ReLU(inplace=True),
            nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


@register_architecture("mlp")
class MLP(nn.Module):
    """Fully connected net for tables (or flattened images): ``hidden`` widths, ReLU, dropout."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int,
                 hidden: Sequence[int] = (128, 64), dropout: float = 0.1) -> None:
        super().__init__()
        width = 1
        for d in input_shape:
            width *= int(d)
        layers: list[nn.Module] = [nn.Flatten()]
        for out in hidden:
            layers += [nn.Linear(width, out), nn.ReLU(inplace=True), nn.Dropout(dropout)]
            width = out
        layers.append(nn.Linear(width, num_classes))
        self.body = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)
