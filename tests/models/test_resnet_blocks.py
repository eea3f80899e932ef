"""advaudit's written-out ResNet is torchvision's: the same initial weights under one seed, the same state dict keys
and shapes, and the same logits to the bit, for ResNet-18 and ResNet-34 at two widths."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from advaudit.models.nets import resnet18, resnet34


def torchvision_scaled_resnet(layers: list[int], num_classes: int, width: int) -> nn.Module:
    """The net as advaudit built it from torchvision's classes before (stem for 3 channels, no max-pool)."""
    from torchvision.models.resnet import BasicBlock, ResNet

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

    net = ScaledResNet()
    net.conv1 = nn.Conv2d(1, width, 3, stride=1, padding=1, bias=False)
    return net


@pytest.mark.parametrize("build, layers, width", [(resnet18, [2, 2, 2, 2], 8), (resnet34, [3, 4, 6, 3], 16)])
def test_the_written_out_resnet_is_torchvisions(build, layers: list[int], width: int) -> None:
    torch.manual_seed(7)
    ours = build((1, 28, 28), 10, width=width)
    torch.manual_seed(7)
    theirs = torchvision_scaled_resnet(layers, 10, width)
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    assert all(torch.equal(a[k], b[k]) for k in a)  # the same construction order: the same initial weights
    x = torch.randn(5, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    for train in (False, True):
        ours.train(train), theirs.train(train)
        assert torch.equal(ours(x), theirs(x))
