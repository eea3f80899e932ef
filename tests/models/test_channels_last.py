"""Image targets load with channels-last (NHWC) weights on a CPU: same predictions, same gradients."""

from __future__ import annotations

from pathlib import Path

import torch

from advaudit.models import load_target, save_target
from advaudit.models.nets import LEGACY_NAMES, build_net
from advaudit.models.targets.target import TorchTarget


def _saved(tmp_path: Path, arch: str, shape: tuple[int, ...], **params) -> Path:
    torch.manual_seed(0)
    meta = {"arch": LEGACY_NAMES[arch], "arch_params": params, "class_names": ["a", "b", "c"], "input_shape": list(shape),
            "normalization": {"mean": [0.5] * (shape[0] if len(shape) == 3 else shape[0]),
                              "std": [0.25] * (shape[0] if len(shape) == 3 else shape[0])}}
    net = build_net(LEGACY_NAMES[arch], shape, 3, **params)
    for module in net.modules():  # non-trivial BatchNorm statistics, so eval mode is not an identity
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 2.0)
    return save_target(TorchTarget(net, meta, temperature=1.5), tmp_path / f"{arch}.pt")


def _conv_weights(target: TorchTarget) -> list[torch.Tensor]:
    return [p for p in target.parameters() if p.dim() == 4]


def test_image_target_loads_channels_last_with_the_same_outputs_and_input_gradients(tmp_path: Path) -> None:
    path = _saved(tmp_path, "cnn", (3, 16, 16), channels=(8, 16), hidden=16)
    nhwc, nchw = load_target(path), load_target(path, channels_last=False)
    assert all(w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous()
               for w in _conv_weights(nhwc))
    assert all(w.is_contiguous() for w in _conv_weights(nchw))
    x = torch.rand(64, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    p_new, p_old = nhwc.predict_proba(x), nchw.predict_proba(x)
    assert torch.allclose(p_new, p_old, atol=1e-5)
    assert torch.equal(p_new.argmax(1), p_old.argmax(1))
    grads = []
    for target in (nhwc, nchw):  # the white-box paths (fault-test walk, reference attack) differentiate inputs
        xx = x.clone().requires_grad_(True)
        grad, = torch.autograd.grad(target.logits(xx)[:, 0].sum(), xx)
        grads.append(grad)
    assert torch.allclose(grads[0], grads[1], atol=1e-5)
    # saving a channels-last target and loading it back keeps the weights' values
    again = load_target(save_target(nhwc, tmp_path / "again.pt"), channels_last=False)
    assert all(torch.equal(a, b) for a, b in zip(_conv_weights(again), _conv_weights(nchw)))


def test_tables_keep_their_layout(tmp_path: Path) -> None:
    target = load_target(_saved(tmp_path, "mlp", (5,), hidden=[8]))
    assert all(p.is_contiguous() for p in target.parameters())
    assert target.predict_proba(torch.rand(3, 5)).shape == (3, 3)
