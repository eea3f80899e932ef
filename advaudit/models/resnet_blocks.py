"""torchvision's ResNet (BasicBlock layout: ResNet-18/34), written out so that loading a ResNet target does not
import torchvision, whose import pulls in ``torch._dynamo``, the inductor and sympy (~2.6 s in every examination and
every shard of one).

The module names, their construction order (so the same seed gives the same initial weights), the state dict's keys
and the forward pass's operations are torchvision's ``ResNet`` / ``BasicBlock`` (torchvision 0.29,
``torchvision/models/resnet.py``); ``tests/models/test_resnet_blocks.py`` checks all three against torchvision.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def _conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a shortcut (``downsample`` where the shape changes)."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        """``[B, inplanes, H, W]`` -> ``[B, planes, H / stride, W / stride]``."""
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = self.downsample(x) if self.downsample is not None else x
        out += identity
        return self.relu(out)


class ScaledResNet(nn.Module):
    """ResNet with ``width`` planes in the first stage (64: the standard net), four stages of ``layers`` blocks, a
    7x7 stride-2 stem on 3 channels (callers replace ``conv1`` for small inputs) and no max-pool."""

    def __init__(self, layers: list[int], num_classes: int, width: int) -> None:
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(width), nn.ReLU(inplace=True)
        self.maxpool = nn.Identity()
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """Images ``[B, C, H, W]`` -> logits ``[B, num_classes]``."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))
