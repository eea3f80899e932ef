"""Bias injection: give a model known weaknesses so every audit can be validated against them.

All options are plain config (``dataset.bias``) and apply to the **training** split only, except
``test_grayscale`` which is a test-time shift:

``drop_subgroup``: ``{class: c, attribute: a, low: l, high: h}`` (or a list of them) removes training
    items of class ``c`` whose attribute ``a`` lies in ``[l, h]`` (a dataset attribute such as a render
    factor or a table column, or an image statistic: ``brightness`` = mean intensity, ``contrast`` =
    std, ``size`` = share of pixels above 0.1, the garment's area). A list of two drops ties a
    feature to a class in both directions (e.g. bright pullovers and dark coats only: an injected fault).
``max_per_group``: ``{m: 10, group: instance}`` keeps at most ``m`` items per group (``instance``
    ids for rendered worlds, ``class`` for per-class caps); asking for more than exists is an error.
``test_grayscale``: ``true`` converts the test split's RGB images to grayscale (kept 3-channel).
``test_contrast``: ``k`` scales each test image's contrast about its own mean by ``k`` (a test-time
    shift for grayscale data; ``0.5`` halves it), clipped to [0, 1].
``spurious``: ``{class: c, kind: patch|brightness|column, strength: s, fraction: f}`` ties an
    irrelevant feature to label ``c`` in training: a bright corner patch, a brightness offset, or
    (tables) an extra feature column equal to ``strength`` for class ``c`` and 0 otherwise.
    ``fraction`` is the share of class-``c`` items that get it.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import Tensor

from advaudit.data.split import Split, class_index
from advaudit.errors import AdvauditError, require

KNOWN_OPTIONS = {"drop_subgroup", "max_per_group", "test_grayscale", "test_contrast", "spurious"}
IMAGE_STATISTICS = ("brightness", "contrast", "size")
SIZE_THRESHOLD = 0.1  # a pixel above this belongs to the object (Fashion-MNIST backgrounds are 0)


def apply_bias(split: Split, bias: Mapping[str, Any], class_names: list[str], seed: int) -> Split:
    """Apply the training-split options of ``bias`` to ``split`` (returns a new split)."""
    unknown = set(bias) - KNOWN_OPTIONS
    require(not unknown, f"unknown bias option(s) {sorted(unknown)}; use {sorted(KNOWN_OPTIONS)}")
    generator = torch.Generator().manual_seed(seed + 17)
    drops = bias.get("drop_subgroup")
    for drop in ([drops] if isinstance(drops, Mapping) else list(drops or [])):
        split = drop_subgroup(split, class_names=class_names, **dict(drop))
    if bias.get("max_per_group"):
        split = keep_per_group(split, generator=generator, **dict(bias["max_per_group"]))
    if bias.get("spurious"):
        split = tie_spurious_feature(split, class_names=class_names, generator=generator,
                                     **dict(bias["spurious"]))
    return split


def apply_test_shift(split: Split, bias: Mapping[str, Any]) -> Split:
    """Apply the test-time shift options of ``bias`` (``test_grayscale``, ``test_contrast``)."""
    if bias.get("test_grayscale"):
        split = Split(to_grayscale(split.x), split.y, split.attributes)
    if bias.get("test_contrast") is not None:
        split = Split(scale_contrast(split.x, float(bias["test_contrast"])), split.y, split.attributes)
    return split


def scale_contrast(x: Tensor, factor: float) -> Tensor:
    """``[N, C, H, W]`` images with contrast about each image's mean scaled by ``factor`` (in [0, 1])."""
    require(factor >= 0, f"test_contrast={factor} must be >= 0 (1 leaves images unchanged)")
    mean = x.mean(dim=tuple(range(1, x.dim())), keepdim=True)
    return (mean + factor * (x - mean)).clamp(0, 1)


def image_statistic(x: Tensor, name: str) -> Tensor:
    """``[N]`` statistic of images ``[N, C, H, W]``: ``brightness`` (mean), ``contrast`` (std) or ``size``
    (share of pixels above :data:`SIZE_THRESHOLD`)."""
    flat = x.flatten(1)
    if name == "brightness":
        return flat.mean(1)
    if name == "contrast":
        return flat.std(1)
    if name == "size":
        return (flat > SIZE_THRESHOLD).float().mean(1)
    raise AdvauditError(f"image statistic {name!r} is unknown; use one of {list(IMAGE_STATISTICS)}")


def attribute_values(split: Split, attribute: str) -> Tensor:
    """Per-item values ``[N]`` of a named attribute or image statistic."""
    if attribute in split.attributes:
        return split.attributes[attribute].float()
    if split.x.dim() == 4 and attribute in IMAGE_STATISTICS:
        return image_statistic(split.x, attribute)
    available = sorted(split.attributes) + (list(IMAGE_STATISTICS) if split.x.dim() == 4 else [])
    raise AdvauditError(f"attribute {attribute!r} does not exist; use one of {available}")


def drop_subgroup(split: Split, class_names: list[str], attribute: str, low: float, high: float,
                  **kwargs: Any) -> Split:
    """Remove items of one class whose ``attribute`` is in ``[low, high]``."""
    cls = class_index(kwargs.pop("class"), class_names)
    require(not kwargs, f"drop_subgroup got unknown keys {sorted(kwargs)}")
    require(low <= high, f"drop_subgroup bounds low={low} > high={high}; swap them")
    values = attribute_values(split, attribute)
    drop = (split.y == cls) & (values >= low) & (values <= high)
    require(int(drop.sum()) > 0, f"drop_subgroup removes nothing: no class {class_names[cls]!r} item "
            f"has {attribute} in [{low}, {high}] (observed range {values.min():.3g}..{values.max():.3g})")
    return split.subset(~drop)


def keep_per_group(split: Split, m: int, group: str = "instance",
                   generator: torch.Generator | None = None) -> Split:
    """Keep at most ``m`` randomly chosen items per group (``instance`` attribute or ``class``)."""
    require(m >= 1, f"max_per_group.m={m} must be >= 1")
    keys = split.y if group == "class" else attribute_values(split, group).long()
    counts = torch.bincount(keys - keys.min())
    require(m <= int(counts.max()), f"max_per_group.m={m} is larger than the {int(counts.max())} items "
            f"available per {group}; use m <= {int(counts.max())}")
    order = torch.randperm(len(split), generator=generator)
    shuffled = keys[order]
    # rank of each item within its group, in shuffled order
    sort_keys, sort_idx = torch.sort(shuffled, stable=True)
    starts = torch.searchsorted(sort_keys, sort_keys, right=False)
    rank_sorted = torch.arange(len(sort_keys)) - starts
    rank = torch.empty_like(rank_sorted)
    rank[sort_idx] = rank_sorted
    chosen = order[rank < m]
    return split.subset(chosen.sort().values)


def to_grayscale(x: Tensor) -> Tensor:
    """RGB images ``[N, 3, H, W]`` -> luminance replicated to 3 channels (ITU-R 601 weights)."""
    require(x.dim() == 4 and x.shape[1] == 3,
            f"test_grayscale needs RGB images [N, 3, H, W], got shape {tuple(x.shape)}")
    weights = torch.tensor([0.299, 0.587, 0.114], dtype=x.dtype).view(1, 3, 1, 1)
    return (x * weights).sum(1, keepdim=True).expand_as(x).contiguous()


def tie_spurious_feature(split: Split, class_names: list[str], kind: str = "patch",
                         strength: float = 1.0, fraction: float = 1.0,
                         generator: torch.Generator | None = None, **kwargs: Any) -> Split:
    """Add an irrelevant feature to a share of one class's items (see module docstring)."""
    cls = class_index(kwargs.pop("class"), class_names)
    require(not kwargs, f"spurious got unknown keys {sorted(kwargs)}")
    require(0.0 < fraction <= 1.0, f"spurious.fraction={fraction} must be in (0, 1]")
    members = torch.nonzero(split.y == cls).flatten()
    chosen = members[torch.rand(len(members), generator=generator) < fraction]
    x = split.x.clone()
    attributes = dict(split.attributes)
    flag = torch.zeros(len(split), dtype=torch.long)
    flag[chosen] = 1
    attributes["spurious"] = flag
    if kind == "column":
        require(x.dim() == 2, "spurious.kind=column is for tables; use patch or brightness for images")
        x = torch.cat([x, (flag.float() * strength).unsqueeze(1)], dim=1)
    else:
        require(x.dim() == 4, f"spurious.kind={kind} is for images; use column for tables")
        x[chosen] = add_image_feature(x[chosen], kind, strength)
    return Split(x, split.y, attributes)


def add_image_feature(x: Tensor, kind: str, strength: float) -> Tensor:
    """Imprint a spurious feature on images ``[N, C, H, W]`` in [0, 1].

    ``patch``: a square in the top-left corner (1/5 of the side) set to ``strength``;
    ``brightness``: add ``strength`` to every pixel. Results are clipped to [0, 1].
    """
    x = x.clone()
    if kind == "patch":
        side = max(2, x.shape[-1] // 5)
        x[..., :side, :side] = strength
    elif kind == "brightness":
        x = x + strength
    else:
        raise AdvauditError(f"spurious.kind={kind!r} is unknown; use patch, brightness or column")
    return x.clamp_(0.0, 1.0)
