"""ShapeWorld: 10 classes of everyday objects under the 12 rendering factors of the examiner
paper's Table 1, rendered in pure PyTorch (CPU or GPU), batched over instances and conditions."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any, Mapping

import torch
from torch import Tensor

from advaudit.config.ranges import require_within
from advaudit.errors import require
from advaudit.worlds.protocol import Factor, Instances, check_in_bounds, configure_factors, unit_to_factor
from advaudit.worlds.references import SHAPE_GROUPS, SHAPE_REFERENCES
from advaudit.worlds.shapes.catalogue import CLASSES, N_PROPORTIONS
from advaudit.worlds.shapes.drawing import draw
from advaudit.worlds.settings import ShapesWorldConf
from advaudit.worlds.validity import mask_checks
from advaudit.runtime import resolve_device

# Table 1 of the paper (angles in degrees; camera azimuth spans half a turn as in the paper). Rotations
# and azimuths carry a period of 360 deg: the three sun rotations, the light's azimuth and the camera
# roll span a full turn, so they are circles (0 and 360 deg are one condition); camera azimuth becomes
# one only when widened to [0, 360]. Elevations run pole to pole and are intervals.
TABLE1_FACTORS = [
    Factor("sun_rot_x", 0.0, 360.0, "deg", 360.0), Factor("sun_rot_y", 0.0, 360.0, "deg", 360.0),
    Factor("sun_rot_z", 0.0, 360.0, "deg", 360.0), Factor("sun_energy", 0.0, 5.0, "W/m2"),
    Factor("light_energy", 0.3, 1.0, "kW"), Factor("light_distance", 8.0, 20.0, "m"),
    Factor("light_azimuth", 0.0, 360.0, "deg", 360.0), Factor("light_elevation", -90.0, 90.0, "deg"),
    Factor("camera_distance", 1.0, 5.0, "m"), Factor("camera_azimuth", 0.0, 180.0, "deg", 360.0),
    Factor("camera_elevation", -90.0, 90.0, "deg"), Factor("camera_roll", 0.0, 360.0, "deg", 360.0),
]
# The default S keeps the label (Sec. 2.1) where it matters, on the examiner's worst cases: Table 1
# with the camera between 60 deg below and 60 deg above the object (straight down, a can, a barrel, a
# bowl and a lamp show the same disc), 1.5-3.5 m away (nearer, the object overflows the 32 px frame;
# farther, it shrinks to a few pixels) and the sun at >= 1 W/m2 (below, unlit objects are dark
# blobs); the validity check's size rule (audit.validity.min_extent) does the rest. On a control
# target, an independent strong judge still names 0.55 of BO's worst cases under Table 1 with distance
# [1.5, 4] m, 0.875 in this box with the size check alone and all 120 with the reference judge below in
# the check at 0.99 (benchmarks/worst_case/label_kept.py, benchmarks/worst_case/rejudge.py, docs/results/worst_case/worst-case.md).
# The paper's bounds: ``world=shapes_table1``.
LABEL_KEEPING_BOUNDS = {"camera_elevation": (-60.0, 60.0), "camera_distance": (1.5, 3.5), "sun_energy": (1.0, 5.0)}
DEFAULT_FACTORS = [Factor(f.name, *LABEL_KEEPING_BOUNDS[f.name], f.unit, f.period) if f.name in LABEL_KEEPING_BOUNDS
                   else f for f in TABLE1_FACTORS]
SPLIT_OFFSETS = {"train": 0, "val": 1_000_000, "test": 2_000_000}
# advaudit's reference judge for ShapeWorld, the default validity check's ``audit.validity.reference=world``:
# a ResNet-18 (width 16) trained by ``train.py experiment=examiner/train_judge`` (seed 42, world seed 0)
# on 1.6 M fresh 32 px renders of 1,000 instances per class in the paper's Table-1 box; test accuracy
# 0.977, 0.995 on random conditions of the default box; sha256 1c9367db... (docs/results/worst_case/worst-case.md,
# "A judge in the default check"). Loaded with weights_only like every target.pt.
REFERENCE_JUDGE = Path(__file__).with_name("reference_judge.pt")


#: pixels one renderer call may draw (whole classes; :func:`scenes_per_call`)
CALL_PIXELS = 2 ** 20


def scenes_per_call(size: int) -> int:
    """How many scenes of ``size`` px one renderer call may draw: :data:`CALL_PIXELS` worth. The classes of a batch
    are packed into calls of at most this many scenes (a class with more gets a call of its own:
    :func:`~advaudit.worlds.shapes.drawing.chunks`); every packing draws the same pixels, so this only sets the
    speed. A call costs ~1,000 small torch ops whatever its size: a shard's step (10 instances x 16 queries, one
    class each, 32 px) took 0.52x the CPU time in one call as in one per class; but a call's element-wise passes
    over many rays run slower than in smaller calls (caches), so past about a million pixels one call no longer
    pays: 1,280 scenes in one call took 0.87x at 32 px, 1.13x at 64 px (0.83x for 320 scenes). Measured with
    ``benchmarks/worlds/render_classes.py`` (docs/results/scale/performance.md, "ShapeWorld: several classes in
    one renderer call")."""
    return CALL_PIXELS // (size * size)


def _split_seed(seed: int, split: str) -> int:
    return int(hashlib.sha256(f"shapeworld/{seed}/{split}".encode()).hexdigest()[:12], 16)


def hsv_to_rgb(h: Tensor, s: Tensor, v: Tensor) -> Tensor:
    """HSV in [0, 1] ``[N]`` each -> RGB ``[N, 3]``."""
    k = torch.stack([(5 + h * 6) % 6, (3 + h * 6) % 6, (1 + h * 6) % 6], -1)
    return v[:, None] - v[:, None] * s[:, None] * (torch.minimum(k, 4 - k).clamp(0, 1))


# unit numbers behind one instance: its N_PROPORTIONS proportions, hue, saturation, value, specular, shininess
INSTANCE_UNITS = N_PROPORTIONS + 5


def instance_data(u: Tensor) -> dict[str, Tensor]:
    """Instance attributes from unit numbers ``u`` ``[N, INSTANCE_UNITS]`` in [0, 1]: proportions ``[N, 6]``,
    albedo ``[N, 3]`` (HSV with saturation in [0.35, 0.9], value in [0.45, 0.95]), specular ``[N]`` in
    [0, 0.5], shininess ``[N]`` in [8, 64]."""
    p = N_PROPORTIONS
    return {"proportions": u[:, :p].contiguous(),
            "albedo": hsv_to_rgb(u[:, p], 0.35 + 0.55 * u[:, p + 1], 0.45 + 0.5 * u[:, p + 2]),
            "specular": 0.5 * u[:, p + 3], "shininess": 8 + 56 * u[:, p + 4]}


#: the settings' defaults (:class:`~advaudit.worlds.settings.ShapesWorldConf`, their one declaration)
_SETTINGS = ShapesWorldConf()


class ShapeWorld:
    """Objects z (class, proportions, colour, material) rendered under conditions s.

    Defaults and ranges: :class:`~advaudit.worlds.settings.ShapesWorldConf` (``conf/world/shapes.yaml``).

    Args:
        image_size: output side (32 or 64 typical).
        instances_per_class: ``{train, val, test}`` instance counts per class (disjoint sets).
        seed: generates the instances deterministically.
        factors: overrides ``{name: [low, high] | value}`` of the default bounds (``DEFAULT_FACTORS``).
        classes: subset of class names (default: all 10).
        shadows: cast shadow rays for the sun and the point light.
        device: where instances live and rendering runs.
    """

    def __init__(self, image_size: int = _SETTINGS.image_size, instances_per_class: Mapping[str, int] | None = None,
                 seed: int = _SETTINGS.seed, factors: Mapping[str, Any] | None = None,
                 classes: list[str] | None = None, shadows: bool = _SETTINGS.shadows, device: str = "cpu") -> None:
        require_within(ShapesWorldConf, "image_size", image_size, "world.image_size")
        self.image_size = int(image_size)
        self.image_shape = (3, self.image_size, self.image_size)
        self.class_names = list(classes) if classes else list(CLASSES)
        unknown = [c for c in self.class_names if c not in CLASSES]
        require(not unknown, f"unknown ShapeWorld classes {unknown}; use {list(CLASSES)}")
        self.counts = {**_SETTINGS.instances_per_class, **dict(instances_per_class or {})}
        self.seed, self.shadows = int(seed), bool(shadows)
        self.device = resolve_device(device)
        self.factors = configure_factors(DEFAULT_FACTORS, factors)

    def reference_judge(self) -> Path | None:
        """The packaged reference judge (:data:`REFERENCE_JUDGE`) where it was trained on this world: all
        ten classes, shadows on and every factor's bounds within Table 1 (it renders at its own 32 px);
        else None."""
        within = {f.name: (f.low, f.high) for f in TABLE1_FACTORS}
        trained_here = self.class_names == list(CLASSES) and self.shadows and all(
            within[f.name][0] <= f.low and f.high <= within[f.name][1] for f in self.factors)
        return REFERENCE_JUDGE if trained_here else None

    def reference_values(self) -> dict[str, float | None]:
        """Each factor's reference, or None where it has none (:data:`advaudit.worlds.references.SHAPE_REFERENCES`)."""
        return {f.name: SHAPE_REFERENCES.get(f.name) for f in self.factors}

    def factor_groups(self) -> dict[str, list[str]]:
        """The camera's factors and the lights' energies and distance (:data:`advaudit.worlds.references.SHAPE_GROUPS`)."""
        return {name: list(members) for name, members in SHAPE_GROUPS.items()}

    def instances(self, split: str) -> Instances:
        require(split in SPLIT_OFFSETS, f"unknown split {split!r}; use {list(SPLIT_OFFSETS)}")
        per_class = int(self.counts[split])
        require(per_class >= 1, f"instances_per_class.{split}={per_class} must be >= 1")
        g = torch.Generator().manual_seed(_split_seed(self.seed, split))
        k = len(self.class_names)
        n = k * per_class
        labels = torch.arange(k).repeat_interleave(per_class)
        # drawn in this order (proportions, then hue, saturation, value, specular, shininess), as always
        u = torch.cat([torch.rand(n, N_PROPORTIONS, generator=g)]
                      + [torch.rand(n, 1, generator=g) for _ in range(INSTANCE_UNITS - N_PROPORTIONS)], 1)
        ids = SPLIT_OFFSETS[split] + torch.arange(n)
        return Instances(instance_data(u), labels, ids).to(self.device)

    @property
    def scene_units(self) -> int:
        """How many unit numbers make one scene: an instance's (:data:`INSTANCE_UNITS`) and the factors'."""
        return INSTANCE_UNITS + len(self.factors)

    def scenes_from_units(self, u: Tensor, labels: Tensor, factors: list[Factor] | None = None) -> tuple[Instances, Tensor]:
        """New instances and their conditions from unit numbers: ``u`` ``[N, scene_units]`` in [0, 1]
        (an instance's :func:`instance_data`, then each factor uniform in ``factors``' bounds, default
        the world's) and ``labels`` ``[N]`` -> ``(instances, s [N, 1, F])`` for :meth:`render`. Uniform
        ``u`` gives the world's own distribution of instances and conditions; instance ids are -1
        (in no split)."""
        require(u.dim() == 2 and u.shape[1] == self.scene_units and len(u) == len(labels),
                f"u must be [N={len(labels)}, {self.scene_units}], got {list(u.shape)}")
        u = u.to(self.device, torch.float32).clamp(0, 1)
        instances = Instances(instance_data(u[:, :INSTANCE_UNITS]), labels.to(self.device),
                              torch.full((len(u),), -1, dtype=torch.long, device=self.device))
        return instances, unit_to_factor(u[:, None, INSTANCE_UNITS:], factors or self.factors)

    def render(self, z: Instances, s: Tensor) -> Tensor:
        """``s`` ``[N, q, 12]`` in factor units -> ``[N*q, 3, H, W]``; values outside bounds are refused."""
        return self._render(z, s, output="image")

    def render_masks(self, z: Instances, s: Tensor) -> Tensor:
        """Object masks ``[N*q, H, W]`` (True where a ray hits the object) for the same scenes."""
        return self._render(z, s, output="mask")

    def render_with_masks(self, z: Instances, s: Tensor) -> tuple[Tensor, Tensor]:
        """Images ``[N*q, 3, H, W]`` and object masks ``[N*q, H, W]`` from one ray-casting pass."""
        return self._render(z, s, output="both")

    checks_object_height = True

    def render_checked(self, z: Instances, s: Tensor, rules: Any) -> tuple[Tensor, dict[str, Tensor]]:
        """Images ``[N*q, 3, H, W]`` and, from the same ray-casting pass, the label-preservation checks
        (each ``[N*q]`` bool, True = passed; ``rules`` is a :class:`~advaudit.worlds.validity.ValidityConf`):

        - ``in_frame``: no object pixel on the image border (the whole object is visible);
        - ``min_extent``: the object spans at least ``rules.min_extent`` of the frame along its longer
          image axis (so a speck far away, or an object seen edge-on, does not count as a view of it).
        """
        images, masks = self.render_with_masks(z, s)
        return images, mask_checks(masks, rules.min_extent)

    def with_image_size(self, image_size: int) -> "ShapeWorld":
        """The same world (instances, factors, lights) rendered at another resolution."""
        require(8 <= image_size <= 512, f"image_size={image_size}; use 8..512 pixels")
        other = copy.copy(self)
        other.image_size, other.image_shape = int(image_size), (3, int(image_size), int(image_size))
        return other

    def subsample(self, images: Tensor, image_size: int) -> Tensor | None:
        """``images`` ``[B, 3, H, H]`` rendered by this world as :meth:`with_image_size` ``(image_size)`` renders
        the same scenes, without rendering: where ``H = k * image_size`` with ``k`` odd, the ray through pixel
        ``i`` at ``image_size`` is the ray through pixel ``k * i + k // 2`` at ``H`` (the same float grid), and
        a pixel's colour depends on its ray only, so every ``k``-th pixel is the smaller image (224 px -> 32 px:
        ``k = 7``). None where the sizes are not so related."""
        k, rest = divmod(self.image_size, int(image_size))
        if rest or k % 2 == 0 or images.shape[-1] != self.image_size:
            return None
        return images[..., k // 2::k, k // 2::k]

    def _render(self, z: Instances, s: Tensor, output: str, per: int | str = "auto") -> Any:
        """Images and/or masks of ``s`` ``[N, q, F]`` (``output``: image, mask or both), drawn class by class,
        as many classes per renderer call as fit in ``per`` scenes (0: one class per call; ``"auto"``:
        :func:`scenes_per_call`); every ``per`` gives the same pixels, bit for bit."""
        require(s.dim() == 3 and len(s) == len(z), f"s must be [N={len(z)}, q, {len(self.factors)}], "
                f"got {list(s.shape)}")
        check_in_bounds(s, self.factors)
        n, q, _ = s.shape
        flat_s = s.reshape(n * q, -1).to(self.device, torch.float32)
        rows = torch.arange(n, device=self.device).repeat_interleave(q)
        labels = z.labels.to(self.device)[rows]
        size = self.image_size
        images = (torch.empty(n * q, *self.image_shape, device=self.device) if output != "mask" else None)
        masks = (torch.empty(n * q, size, size, device=self.device, dtype=torch.bool) if output != "image" else None)
        data = {k: v.to(self.device)[rows] for k, v in z.data.items()}
        groups = [(self.class_names[cls], (labels == cls).nonzero().squeeze(1)) for cls in labels.unique().tolist()]
        per = scenes_per_call(size) if per == "auto" else per
        draw(groups, data, flat_s, size, self.shadows, per, output, (images, masks))
        return {"image": images, "mask": masks, "both": (images, masks)}[output]

    def random_conditions(self, n: int, q: int, generator: torch.Generator | None = None) -> Tensor:
        """Uniform random conditions ``[n, q, 12]`` in factor units."""
        return unit_to_factor(torch.rand(n, q, len(self.factors), generator=generator), self.factors)
