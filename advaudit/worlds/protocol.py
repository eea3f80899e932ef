"""The World protocol: instances ``z`` with labels, a factor space ``S`` and a batched renderer.

This is the paper's ``x = g(z, s)``. Examiners search the unit cube; :func:`unit_to_factor` maps
it onto the factors' bounds. Factor values outside their bounds are **refused** by
:func:`check_in_bounds` (a silently clipped query would make an examiner believe it tested a
condition it did not), while unit-cube values are clipped into [0, 1] by :func:`unit_to_factor`.

Angles are circles: a factor declared with a ``period`` (360 for an angle in degrees, 1 for a hue
in turns) whose configured bounds span exactly one period is **periodic**: its two ends are one
condition, and examiners, distances and regions on it wrap (:func:`periodic_mask`). A narrowed
range (``camera_roll: [0, 240]``) is an interval, not a circle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Protocol, Sequence

import torch
from torch import Tensor

from advaudit.errors import AdvauditError, require
from advaudit.models.targets.classes import align_target


@dataclass(frozen=True)
class Factor:
    """One axis of the condition space ``S``: ``name`` ranging over ``[low, high]`` in ``unit``.

    ``period``: the length of one full turn in ``unit`` for a factor that is an angle (360 for
    degrees), or None. The factor is :attr:`periodic` only when its bounds span exactly one period.
    """

    name: str
    low: float
    high: float
    unit: str = ""
    period: float | None = None

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise AdvauditError(f"factor {self.name!r} has low={self.low} > high={self.high}; "
                                "swap the bounds")
        if self.period is not None and not self.period > 0:
            raise AdvauditError(f"factor {self.name!r} has period={self.period}; a period must be > 0")

    @property
    def fixed(self) -> bool:
        return self.low == self.high

    @property
    def periodic(self) -> bool:
        """True when the bounds span one full period: ``low`` and ``high`` are the same condition."""
        return self.period is not None and math.isclose(self.high - self.low, self.period, rel_tol=1e-9,
                                                        abs_tol=1e-9)


def periodic_mask(factors: Sequence[Factor]) -> list[bool]:
    """Which of ``factors`` are circles (see :attr:`Factor.periodic`), in order."""
    return [f.periodic for f in factors]


@dataclass
class Instances:
    """The ``z_i`` and ``y_i`` of a world.

    Attributes:
        data: per-instance parameters ``{name: [N, ...]}`` (shape world) or images
            ``[N, C, H, W]`` (transform world).
        labels: ``[N]`` int64 class indices.
        ids: ``[N]`` int64 stable instance ids.
    """

    data: Tensor | dict[str, Tensor]
    labels: Tensor
    ids: Tensor

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, index: Tensor) -> "Instances":
        data = ({k: v[index] for k, v in self.data.items()} if isinstance(self.data, dict)
                else self.data[index])
        return Instances(data, self.labels[index], self.ids[index])

    def to(self, device: torch.device | str) -> "Instances":
        data = ({k: v.to(device) for k, v in self.data.items()} if isinstance(self.data, dict)
                else self.data.to(device))
        return Instances(data, self.labels.to(device), self.ids.to(device))


class World(Protocol):
    """A parametric input space (see the module docstring).

    Besides these members a world may offer the features of :data:`OPTIONAL`, each read with :func:`offered`
    (a world without one has its default there).
    """

    factors: Sequence[Factor]
    class_names: list[str]
    image_shape: tuple[int, int, int]

    def instances(self, split: str) -> Instances:
        """The instances of ``split`` (``train``, ``val`` or ``test``)."""
        ...

    def render(self, z: Instances, s: Tensor) -> Tensor:
        """``s`` ``[N, q, C]`` in factor units -> images ``[N*q, C, H, W]`` in [0, 1];
        row ``n*q + j`` is instance ``n`` under ``s[n, j]``."""
        ...


#: the reference judge's threshold where neither ``audit.validity.reference_min_prob`` nor the world names one
#: (:data:`OPTIONAL` ``reference_min_prob``; ShapeWorld's, measured in docs/results/worst_case/worst-case.md)
DEFAULT_MIN_PROB = 0.99

#: every feature a world may offer besides :class:`World`'s members, with what a world without it has. Code that
#: reads one calls :func:`offered` (which refuses a name not declared here), never ``hasattr``.
OPTIONAL: dict[str, Any] = {
    # where it renders (a torch device or its name)
    "device": "cpu",
    # the side of its square images in pixels, where one setting sets it
    "image_size": None,
    # (image_size) -> the same world rendering at another size (a gallery's larger images, a reference judge's size)
    "with_image_size": None,
    # (images [B, C, H, W], image_size) -> [B, C, s, s]: the same pixels as rendering at s (None: cannot)
    "subsample": None,
    # (z, s [N, q, C], rules: ValidityConf) -> (images [N*q, ...], {check: [N*q] bool}): rendered and checked
    # geometrically (in_frame, min_extent) in one pass (advaudit.worlds.validity)
    "render_checked": None,
    # its geometric checks measure the object's extent (audit.validity.min_extent applies)
    "checks_object_height": False,
    # () -> the path of its own reference judge (audit.validity.reference=world), or None
    "reference_judge": None,
    # its reference judge's threshold, declared where the judge was measured
    "reference_min_prob": DEFAULT_MIN_PROB,
    # () -> {factor: the value that does nothing out of the ordinary, or None}: the comparison's interventions
    # set factors to it (advaudit.worlds.references, advaudit.compare.why); None: no references
    "reference_values": None,
    # () -> {group: [factor, ...]}: factors that belong together, intervened on together
    "factor_groups": None,
    # (u [B, scene_units], labels [B], factors) -> (Instances, s [B, 1, C]): scenes drawn from unit numbers
    # (model.objective=rendered trains a generator through them)
    "scenes_from_units": None,
    # how many unit numbers name one scene (with scenes_from_units)
    "scene_units": 0,
}


def offered(world: Any, feature: str) -> Any:
    """The world's ``feature`` (one of :data:`OPTIONAL`), or the default a world without it has."""
    if feature not in OPTIONAL:
        raise KeyError(f"{feature!r} is not a world feature declared in advaudit.worlds.protocol.OPTIONAL")
    return getattr(world, feature, OPTIONAL[feature])


def factor_bounds(factors: Sequence[Factor], device: torch.device | str | None = None) -> Tensor:
    """``[2, C]`` float32 tensor of lows and highs."""
    return torch.tensor([[f.low for f in factors], [f.high for f in factors]], dtype=torch.float32,
                        device=device)


def unit_to_factor(u: Tensor, factors: Sequence[Factor]) -> Tensor:
    """Map unit-cube points ``[..., C]`` (clipped into [0, 1]) to factor units ``[..., C]``."""
    bounds = factor_bounds(factors, u.device).to(u.dtype)
    return bounds[0] + u.clamp(0, 1) * (bounds[1] - bounds[0])


def wrap_periodic(s: Tensor, world_factors: Sequence[Factor]) -> Tensor:
    """Values ``[..., C]`` with every circle of ``world_factors`` brought into its bounds modulo the period.

    A range on a circle may cross the seam: ``camera_roll: [180, 450]`` is the arc from 180 deg through
    0 to 90 deg, and its value 400 is the condition 40. Factors that are not circles pass unchanged.
    """
    periodic = [i for i, f in enumerate(world_factors) if f.periodic]
    if not periodic:
        return s
    out = s.clone()
    for i in periodic:
        f = world_factors[i]
        out[..., i] = f.low + torch.remainder(s[..., i] - f.low, float(f.period))
    return out


def factor_to_unit(s: Tensor, factors: Sequence[Factor]) -> Tensor:
    """Inverse of :func:`unit_to_factor`; fixed factors map to 0."""
    bounds = factor_bounds(factors, s.device).to(s.dtype)
    span = bounds[1] - bounds[0]
    return torch.where(span > 0, (s - bounds[0]) / span.clamp_min(1e-12), torch.zeros_like(s))


def check_in_bounds(s: Tensor, factors: Sequence[Factor], tolerance: float = 1e-4) -> None:
    """Refuse ``s`` ``[..., C]`` with any value outside its factor's bounds (names the first)."""
    require(s.shape[-1] == len(factors), f"s has {s.shape[-1]} factors, the world has {len(factors)} "
            f"({[f.name for f in factors]})")
    bounds = factor_bounds(factors, s.device)
    span = (bounds[1] - bounds[0]).clamp_min(1.0) * tolerance
    below, above = s < bounds[0] - span, s > bounds[1] + span
    bad = (below | above).reshape(-1, len(factors)).any(0)
    if bad.any():
        f = factors[int(bad.nonzero()[0])]
        values = s.reshape(-1, len(factors))[:, int(bad.nonzero()[0])]
        raise AdvauditError(f"factor {f.name!r} has values in [{values.min():.4g}, {values.max():.4g}] "
                            f"outside its bounds [{f.low}, {f.high}]; map unit-cube points with unit_to_factor")


def configure_factors(defaults: Sequence[Factor], overrides: Mapping[str, Any] | None) -> list[Factor]:
    """Apply config overrides ``{name: [low, high] | value | {low, high}}`` to default factors.

    A single value fixes the factor. Unknown names are an error that lists the known ones.
    """
    factors = {f.name: f for f in defaults}
    for name, value in (overrides or {}).items():
        if name not in factors:
            raise AdvauditError(f"unknown factor {name!r}; this world's factors are {list(factors)}")
        if isinstance(value, Mapping):
            low, high = value.get("low", factors[name].low), value.get("high", factors[name].high)
        elif isinstance(value, (list, tuple)) or hasattr(value, "__len__") and not isinstance(value, str):
            require(len(value) == 2, f"factor {name!r} override must be [low, high] or one value")
            low, high = value
        else:
            low = high = value
        factors[name] = replace(factors[name], low=float(low), high=float(high))
    return list(factors.values())


def fit_target_to_world(world: World, target: Any) -> Any:
    """``target`` with its outputs in the world's class order (:func:`advaudit.models.targets.classes.align_target`).

    Raises naming both sides when ``target`` can't take the world's images, or a class has no partner by name.
    """
    if tuple(target.input_shape) != tuple(world.image_shape):
        raise AdvauditError(f"the world renders images of shape {list(world.image_shape)} but the target "
                            f"takes {list(target.input_shape)}; set world.image_size / use a target "
                            "trained on this world")
    return align_target(target, list(world.class_names), "the world")
