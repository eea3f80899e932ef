"""Network architectures for target classifiers, each a class or builder named by ``_target_``.

A model config names its architecture as a block, ``model.arch: {_target_: <class or function>,
_partial_: true, <its own keyword arguments>}``; training supplies ``input_shape`` and
``num_classes`` (:data:`SUPPLIED`). The architectures here are advaudit's own; one of the user's
plugs in the same way (docs/extending.md). Every net takes *normalised* input
``[B, *input_shape]`` and returns logits ``[B, num_classes]``.

A checkpoint stores the architecture as plain data: its ``_target_`` (``meta["arch"]``) and its
keyword arguments (``meta["arch_params"]``). Rebuilding one never runs code because the file names
it: advaudit's own (:data:`BUILTIN`) are rebuilt as they are, any other ``_target_`` only when the
user's config names that same one (:func:`checkpoint_architecture`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
from torch import nn

from advaudit.confutil import named_object, refuse_unknown_arguments, split_target_block
from advaudit.errors import AdvauditError, require
from advaudit.models.resnet_blocks import ScaledResNet

#: the keyword arguments training gives every architecture, besides its own settings
SUPPLIED = ("input_shape", "num_classes")
#: advaudit's own architectures, each under the short name that checkpoints written before architectures
#: were named by ``_target_`` store in ``meta["arch"]``. A checkpoint naming one of these ``_target_`` (or
#: short names) is rebuilt from the file alone; an architecture added to this module is added here too.
LEGACY_NAMES = {
    "cnn": "advaudit.models.nets.SmallCNN",
    "mlp": "advaudit.models.nets.MLP",
    "alexnet": "advaudit.models.nets.SmallAlexNet",
    "resnet18": "advaudit.models.nets.resnet18",
    "resnet34": "advaudit.models.nets.resnet34",
}
#: the ``_target_`` of advaudit's own architectures. Only these are built because a file names them: any
#: other callable (even one of this module's helpers, such as :func:`build_net`, which imports what its
#: ``target`` argument names) needs the user's config to name it
BUILTIN = frozenset(LEGACY_NAMES.values())


def split_arch(block: Any) -> tuple[str, dict[str, Any]]:
    """A ``model.arch`` block as ``(_target_, its keyword arguments)`` (Hydra's ``_..._`` keys dropped)."""
    return split_target_block(block, "model.arch", "architecture", "class or function", "conf/model/cnn.yaml")


def build_net(target: str, input_shape: Sequence[int], num_classes: int, **params: Any) -> nn.Module:
    """The architecture ``target`` (a dotted path) for inputs ``input_shape`` and ``num_classes`` outputs.

    ``params`` are its own keyword arguments; a key it does not take is refused (one line, with the
    closest one it does), as is one of :data:`SUPPLIED`.
    """
    refuse_unknown_arguments("model.arch", "architecture", {"_target_": target, **params}, SUPPLIED, "training")
    make = named_object(target, "model.arch")
    net = make(input_shape=tuple(int(d) for d in input_shape), num_classes=int(num_classes), **params)
    require(isinstance(net, nn.Module), f"model.arch._target_={target} built a {type(net).__name__}, not a "
            "torch.nn.Module; an architecture maps normalised inputs [B, *input_shape] to logits [B, num_classes]")
    return net


def checkpoint_architecture(meta: Mapping[str, Any], source: str,
                            trusted: Sequence[str] = ()) -> tuple[str, dict[str, Any]]:
    """The ``(_target_, keyword arguments)`` a checkpoint's ``meta`` records, once it may be imported.

    Old checkpoints name advaudit's architectures by :data:`LEGACY_NAMES`. Any ``_target_`` but
    advaudit's own (:data:`BUILTIN`) is accepted only when it is in ``trusted``: the ``_target_`` the
    user's config names (``target.architecture``), never because the file says so.

    Raises:
        AdvauditError: one line naming the architecture and the config that allows it.
    """
    arch = str(meta["arch"])
    target = LEGACY_NAMES.get(arch, arch)
    params = dict(meta.get("arch_params") or {})
    if target in BUILTIN or target in trusted:
        return target, params
    require("." in target, f"{source} names architecture {arch!r}, which is not one of advaudit's "
            f"({', '.join(sorted(LEGACY_NAMES))}); re-export it with train.py")
    named = f" (your config names {', '.join(trusted)})" if trusted else ""
    raise AdvauditError(f"{source} was trained with architecture {target}, which is not advaudit's own; a file never "
                        f"makes advaudit import code, so name it in your config{named}: "
                        f"target={{path: {source}, architecture: {target}}}")


def _image_shape(input_shape: tuple[int, ...], arch: str) -> tuple[int, int, int]:
    require(len(input_shape) == 3, f"{arch} needs image input [C, H, W], got {list(input_shape)}; "
            "use model=mlp (or svm/logreg) for tables")
    return input_shape  # type: ignore[return-value]


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
    """torchvision's ResNet (:mod:`advaudit.models.resnet_blocks`) adapted to small inputs: 3x3 stride-1 stem, no max-pool, any channels."""
    c, _, _ = _image_shape(input_shape, f"resnet{depth}")
    layers = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3]}[depth]
    net = ScaledResNet(layers, num_classes, width)
    net.conv1 = nn.Conv2d(c, net.bn1.num_features, 3, stride=1, padding=1, bias=False)
    net.maxpool = nn.Identity()
    return net


def resnet18(input_shape: tuple[int, ...], num_classes: int, width: int = 64) -> nn.Module:
    """ResNet-18 (no pretrained weights) for small images; ``width`` scales every stage."""
    return _small_input_resnet(18, input_shape, num_classes, width)


def resnet34(input_shape: tuple[int, ...], num_classes: int, width: int = 64) -> nn.Module:
    """ResNet-34 (no pretrained weights) for small images; ``width`` scales every stage."""
    return _small_input_resnet(34, input_shape, num_classes, width)


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
