"""What "a factor at its reference" means in each world, and the factors that belong together.

An intervention on a condition sets one factor (or a group of factors) to its **reference value** and
leaves the others as they were drawn (:mod:`advaudit.compare.why`). The reference is the value at which a
factor does nothing out of the ordinary: for an image transform the identity (no rotation, scale 1,
gamma 1); for a camera an upright view at eye level from a middle distance; for a light of a given
energy or distance, the middle of the range the paper draws it from (the value its training draws
average to). A factor with no such value (which way an object faces, where the sun stands) has none:
its reference is ``None``, no intervention can take it out, and where it matters the region test of the
where section applies instead.

A world declares both in two optional methods (:class:`advaudit.worlds.protocol.World`):
``reference_values() -> {factor: value | None}`` and ``factor_groups() -> {group: [factor, ...]}``;
:func:`references_of` and :func:`groups_of` read them (a world without them has no references and no
groups), and users add groups of their own (``compare.factor_groups``).

Angles are circles: a reference on a circle is a point of it, and the distance from it wraps
(:func:`distance_from_reference`: camera roll 350 deg is 10 deg from 0).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from torch import Tensor

from advaudit.errors import require

#: TransformWorld: every transform's identity
TRANSFORM_REFERENCES: dict[str, float | None] = {
    "rotation": 0.0, "translate_x": 0.0, "translate_y": 0.0, "scale": 1.0, "shear": 0.0, "blur": 0.0,
    "brightness": 0.0, "contrast": 1.0, "gamma": 1.0, "hue": 0.0, "saturation": 1.0}
TRANSFORM_GROUPS: dict[str, list[str]] = {
    "translation": ["translate_x", "translate_y"],
    "geometric": ["rotation", "translate_x", "translate_y", "scale", "shear"],
    "photometric": ["brightness", "contrast", "gamma"],
    "colour": ["hue", "saturation"]}

#: ShapeWorld and MeshWorld (the paper's Table 1): the camera upright (roll 0, on its circle), at eye level
#: (elevation 0) and 2.5 m away (the middle of the default box, where the object fills the frame as in most
#: training renders); the sun's and the point light's energy and the light's distance at the middle of Table 1's
#: ranges. Which way the object faces (camera azimuth), where the sun stands (its three rotations) and where the
#: point light stands (azimuth, elevation) have no ordinary value: None.
SHAPE_REFERENCES: dict[str, float | None] = {
    "camera_roll": 0.0, "camera_elevation": 0.0, "camera_distance": 2.5, "camera_azimuth": None,
    "sun_energy": 2.5, "sun_rot_x": None, "sun_rot_y": None, "sun_rot_z": None,
    "light_energy": 0.65, "light_distance": 14.0, "light_azimuth": None, "light_elevation": None}
SHAPE_GROUPS: dict[str, list[str]] = {
    "camera": ["camera_roll", "camera_elevation", "camera_distance"],
    "lighting": ["sun_energy", "light_energy", "light_distance"]}


def references_of(world: Any) -> dict[str, float | None]:
    """``{factor: reference or None}`` for every factor of ``world`` (None for all where it declares none)."""
    declared = getattr(world, "reference_values", None)
    values = dict(declared()) if callable(declared) else {}
    return {f.name: (None if values.get(f.name) is None else float(values[f.name])) for f in world.factors}


def groups_of(world: Any, extra: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    """The world's groups and ``extra`` (the user's ``compare.factor_groups``; a name they share is the user's),
    each reduced to the factors the world has and that have a reference; groups left with fewer than two
    factors, or with the same factors as an earlier group, are dropped. A user's group naming a factor the world
    does not have raises AdvauditError."""
    references = references_of(world)
    declared = getattr(world, "factor_groups", None)
    groups = {**(dict(declared()) if callable(declared) else {})}
    for name, members in (extra or {}).items():
        unknown = [m for m in members if m not in references]
        require(not unknown, f"compare.factor_groups.{name} names {unknown}, which this world does not have; its "
                f"factors are {list(references)}")
        groups[str(name)] = list(members)
    out: dict[str, list[str]] = {}
    seen: set[tuple[str, ...]] = set()
    for name, members in groups.items():
        kept = [m for m in members if references.get(m) is not None]
        key = tuple(sorted(kept))
        if len(kept) >= 2 and key not in seen:
            out[name] = kept
            seen.add(key)
    return out


def clamped_reference(factor: Any, value: float) -> float:
    """``value`` brought into ``factor``'s bounds: the nearest condition of the box that is at the reference
    (on a circle, the value itself taken round it into the bounds)."""
    if getattr(factor, "periodic", False):
        return float(factor.low + (value - factor.low) % (factor.high - factor.low))
    return float(min(max(value, factor.low), factor.high))


def with_references(s: Tensor, factors: Sequence[Any], names: Sequence[str],
                    references: Mapping[str, float | None]) -> Tensor:
    """``s`` ``[..., C]`` (factor units) with the factors ``names`` set to their reference (clamped into the box)."""
    out = s.clone()
    index = {f.name: i for i, f in enumerate(factors)}
    for name in names:
        value = references.get(name)
        require(value is not None, f"factor {name!r} has no reference value in this world")
        out[..., index[name]] = clamped_reference(factors[index[name]], float(value))
    return out


def distance_from_reference(values: np.ndarray, factor: Any, reference: float) -> np.ndarray:
    """``[...]`` distances of ``values`` from ``reference`` in the factor's units (round the circle where periodic)."""
    d = np.abs(np.asarray(values, float) - reference)
    if getattr(factor, "periodic", False):
        period = factor.high - factor.low
        d = np.minimum(d % period, period - d % period)
    return d


def largest_distance(factor: Any, reference: float) -> float:
    """The farthest a condition of ``factor``'s box can be from ``reference`` (half a turn on a circle)."""
    if getattr(factor, "periodic", False):
        return float((factor.high - factor.low) / 2)
    return float(max(abs(factor.high - reference), abs(reference - factor.low)))
