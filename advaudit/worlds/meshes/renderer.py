"""Mitsuba 3 rendering of one mesh on a ground plane under the 12 factors of the paper's Table 1.

The scene (built once, reused for every instance and query):

- the object: a triangle mesh (swapped in place with ``mi.traverse`` when the instance changes),
  two-sided diffuse with the instance's albedo, scaled to bounding radius ``object_radius``;
- a ground plane (diffuse, ``ground_albedo``) touching the object's lowest point. Table 1 lets the
  camera go down to -90 degrees elevation; a camera below the plane would only see its underside,
  so for those views the plane is moved out of the scene (the object stays visible from below);
- a **sun** (``directional``): rotation angles ``sun_rot_x/y/z`` (XYZ Euler, degrees) turn a light
  shining straight down, ``sun_energy`` is its irradiance in W/m^2 (Blender's sun "strength");
- a **point light** of power ``light_energy`` kW (radiant intensity P / 4 pi W/sr) at
  ``light_distance`` m, ``light_azimuth``, ``light_elevation`` degrees around the object;
- an orbit **camera** (50 degree field of view) at ``camera_distance`` m, ``camera_azimuth``,
  ``camera_elevation`` degrees, rolled by ``camera_roll`` degrees about its viewing axis, aimed at
  the object's centre;
- a dim constant environment (``ambient`` radiance), standing in for Blender's default world.

The geometry conventions (y up; azimuth about y from +z; the sun's Euler order) are ShapeWorld's,
so the same ``s`` puts the camera and lights in the same places in both worlds.

Rendering is Mitsuba's ``path`` integrator (``max_depth`` bounces, ``spp`` samples per pixel),
linear radiance times ``exposure``, then the sRGB transfer curve, clipped to [0, 1]. Every query is
one ``mi.render`` call of the one scene, its parameters updated in place (no scene rebuild, no
kernel recompilation: Dr.Jit's kernel cache hits). With ``batch_cameras``, queries of one
instance that share all eight lighting factors are rendered in one pass with a ``batch`` sensor
(lights are scene-wide in Mitsuba, so queries with different lighting cannot share a pass). Off by
default: measured on CPU at 32 px / 16 spp (benchmarks/worlds/mesh_render_speed.py, docs/results/worlds/worlds.md)
path tracing dominates the per-call overhead, so one pass of q cameras is no faster than q calls,
and each new group size compiles a new kernel. (``dr.freeze`` of the render call halved the CPU
time per render on a fixed scene but crashed Mitsuba 3.9.1 when the mesh was swapped: not used.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from advaudit.worlds.meshes.loading import NormalisedMesh
from advaudit.worlds.meshes.mitsuba_setup import load_mitsuba

FOV_DEGREES = 50.0
GROUND_HALF_SIZE = 60.0
HIDDEN_Y = -1.0e4
MASK_SPP = 16
ALBEDO_KEY = "object.bsdf.brdf_0.reflectance.value"
LIGHTING = slice(0, 8)  # the sun's 4 and the point light's 4 factors


def _spherical(distance: float, azimuth_deg: float, elevation_deg: float) -> np.ndarray:
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    return distance * np.array([math.cos(el) * math.sin(az), math.sin(el), math.cos(el) * math.cos(az)])


def camera_frame(distance: float, azimuth: float, elevation: float, roll: float) -> tuple[np.ndarray, np.ndarray]:
    """Origin ``[3]`` and (rolled) up vector ``[3]`` of the orbit camera (ShapeWorld's convention)."""
    origin = _spherical(distance, azimuth, elevation)
    forward = -origin / np.linalg.norm(origin)
    az, r = math.radians(azimuth), math.radians(roll)
    right = np.array([math.cos(az), 0.0, -math.sin(az)])
    up = np.cross(right, forward)
    return origin, -math.sin(r) * right + math.cos(r) * up


def sun_direction(rot_x: float, rot_y: float, rot_z: float) -> np.ndarray:
    """Unit direction ``[3]`` the sunlight travels: straight down turned by XYZ Euler angles (degrees)."""
    a, b, c = (math.radians(v) for v in (rot_x, rot_y, rot_z))
    d = np.array([0.0, -1.0, 0.0])
    d = np.array([d[0], math.cos(a) * d[1] - math.sin(a) * d[2], math.sin(a) * d[1] + math.cos(a) * d[2]])
    d = np.array([math.cos(b) * d[0] + math.sin(b) * d[2], d[1], -math.sin(b) * d[0] + math.cos(b) * d[2]])
    return np.array([math.cos(c) * d[0] - math.sin(c) * d[1], math.sin(c) * d[0] + math.cos(c) * d[1], d[2]])


def srgb(linear: np.ndarray) -> np.ndarray:
    """The sRGB transfer curve of linear values, clipped to [0, 1]."""
    x = np.clip(linear, 0.0, 1.0)
    return np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055)


def _film(width: int, height: int, alpha: bool = False) -> dict:
    return {"type": "hdrfilm", "width": width, "height": height, "pixel_format": "rgba" if alpha else "rgb",
            "rfilter": {"type": "box"}}


class MitsubaRenderer:
    """Renders normalised meshes under Table-1 conditions (see the module docstring).

    Args:
        image_size: output side in pixels.
        spp: samples per pixel.
        max_depth: path length (2: direct light only, 3: one indirect bounce).
        object_radius: bounding radius of the object in metres (ShapeWorld uses 0.6).
        ambient: radiance of the constant environment.
        exposure: multiplier on linear radiance before the sRGB curve.
        ground: put a ground plane under the object; ground_albedo its RGB reflectance.
        batch_cameras: render queries that share lighting in one pass with a ``batch`` sensor.
        max_batch: most cameras in one ``batch`` sensor.
        device: ``cpu`` (Mitsuba ``llvm_ad_rgb``) or ``cuda`` (``cuda_ad_rgb``).
        threads: Dr.Jit CPU threads (``None``: Dr.Jit's default, all cores).
        seed: the sampler seed (fixed, so the same query always renders the same image).
    """

    def __init__(self, image_size: int = 32, spp: int = 16, max_depth: int = 3, object_radius: float = 0.6,
                 ambient: float = 0.15, exposure: float = 1.0, ground: bool = True,
                 ground_albedo: tuple[float, float, float] = (0.36, 0.33, 0.30), batch_cameras: bool = False,
                 max_batch: int = 16, device: str = "cpu", threads: int | None = None, seed: int = 0) -> None:
        self.mi = mi = load_mitsuba(device, threads)
        self.size, self.spp, self.seed = int(image_size), int(spp), int(seed)
        self.object_radius, self.exposure = float(object_radius), float(exposure)
        self.ground, self.batch_cameras, self.max_batch = bool(ground), bool(batch_cameras), int(max_batch)
        placeholder = self._mesh("object", [0.5] * 3)
        self._set_geometry(mi.traverse(placeholder), "", np.eye(3, dtype=np.float32) * 1e-3,
                           np.array([[0, 1, 2]], np.int32))
        ground_mesh = self._mesh("ground", list(ground_albedo))
        self._ground_faces = np.array([[0, 2, 1], [0, 3, 2]], np.int32)
        self._set_geometry(mi.traverse(ground_mesh), "", self._ground_vertices(HIDDEN_Y), self._ground_faces)
        self.scene = mi.load_dict({
            "type": "scene",
            "integrator": {"type": "path", "max_depth": int(max_depth)},
            "object": placeholder,
            "ground": ground_mesh,
            "sun": {"type": "directional", "direction": [0.0, -1.0, 0.0], "irradiance": {"type": "rgb", "value": 1.0}},
            "lamp": {"type": "point", "position": [0.0, 10.0, 0.0], "intensity": {"type": "rgb", "value": 1.0}},
            "environment": {"type": "constant", "radiance": {"type": "rgb", "value": float(ambient)}},
        })
        self.params = mi.traverse(self.scene)
        self._sensors: dict[tuple[int, bool], tuple[Any, list[Any]]] = {}
        # masks: the film's alpha (the share of a pixel's samples that hit a surface)
        self._mask_integrator = mi.load_dict({"type": "direct", "emitter_samples": 1, "bsdf_samples": 0})
        self._lowest = 0.0
        self._ground_at: float | None = None

    # -- scene set-up ---------------------------------------------------------------------------
    def _mesh(self, name: str, albedo: list[float]) -> Any:
        """An empty triangle mesh with a two-sided diffuse BSDF of reflectance ``albedo`` (two-sided:
        real meshes, ShapeNet's included, often have faces wound the wrong way)."""
        props = self.mi.Properties()
        props["bsdf"] = self.mi.load_dict({"type": "twosided", "bsdf": {
            "type": "diffuse", "reflectance": {"type": "rgb", "value": albedo}}})
        return self.mi.Mesh(name, 3, 1, props=props)

    @staticmethod
    def _ground_vertices(y: float) -> np.ndarray:
        h = GROUND_HALF_SIZE
        return np.array([[-h, y, -h], [h, y, -h], [h, y, h], [-h, y, h]], np.float32)

    def _set_geometry(self, params: Any, prefix: str, vertices: np.ndarray, faces: np.ndarray) -> None:
        mi = self.mi
        params[f"{prefix}vertex_positions"] = mi.Float(np.ascontiguousarray(vertices, np.float32).ravel())
        params[f"{prefix}faces"] = mi.UInt32(np.ascontiguousarray(faces, np.uint32).ravel())
        params.update()

    def set_object(self, mesh: NormalisedMesh, albedo: np.ndarray) -> None:
        """Put ``mesh`` (scaled to ``object_radius``) with diffuse ``albedo`` ``[3]`` in the scene."""
        self._set_geometry(self.params, "object.", mesh.vertices * self.object_radius, mesh.faces)
        self.params[ALBEDO_KEY] = self.mi.Color3f(*[float(c) for c in albedo])
        self.params.update()
        self._lowest = mesh.lowest * self.object_radius

    def _place_ground(self, visible: bool) -> None:
        y = self._lowest if (visible and self.ground) else HIDDEN_Y
        if self._ground_at != y:
            self._set_geometry(self.params, "ground.", self._ground_vertices(y), self._ground_faces)
            self._ground_at = y

    def _set_lighting(self, s: np.ndarray) -> None:
        """Sun and point light from one condition's first 8 factors."""
        mi, T = self.mi, self.mi.ScalarTransform4f
        direction = sun_direction(*s[0:3])
        helper_up = [1.0, 0.0, 0.0] if abs(direction[0]) < 0.9 else [0.0, 0.0, 1.0]
        self.params["sun.to_world"] = T().look_at(origin=[0, 0, 0], target=direction.tolist(), up=helper_up)
        self.params["sun.irradiance.value"] = mi.Color3f(float(s[3]))
        self.params["lamp.position"] = mi.Point3f(*_spherical(float(s[5]), float(s[6]), float(s[7])).tolist())
        self.params["lamp.intensity.value"] = mi.Color3f(float(s[4]) * 1000.0 / (4 * math.pi))
        self.params.update()

    def _sensor(self, k: int, alpha: bool = False) -> tuple[Any, list[Any]]:
        """A sensor with ``k`` cameras (``batch`` when k > 1) and each camera's parameter table,
        cached by ``(k, alpha)`` (``alpha``: RGBA films, for masks). Traversing a ``batch`` sensor
        lists only its first camera, so the cameras are built first and traversed one by one."""
        if (k, alpha) not in self._sensors:
            mi, size = self.mi, self.size
            cameras = [mi.load_dict({"type": "perspective", "fov": FOV_DEGREES, "fov_axis": "x", "near_clip": 0.01,
                                     "film": _film(size, size, alpha), "sampler": {"type": "independent"}})
                       for _ in range(k)]
            sensor = cameras[0] if k == 1 else mi.load_dict({
                "type": "batch", "film": _film(size * k, size, alpha), "sampler": {"type": "independent"},
                **{f"c{i}": camera for i, camera in enumerate(cameras)}})
            self._sensors[k, alpha] = (sensor, [mi.traverse(camera) for camera in cameras])
        return self._sensors[k, alpha]

    def _aim(self, k: int, cameras: np.ndarray, alpha: bool = False) -> Any:
        """Point the ``k``-camera sensor's cameras at the object from ``cameras`` ``[k, 4]``."""
        T = self.mi.ScalarTransform4f
        sensor, tables = self._sensor(k, alpha)
        for params, (d, az, el, roll) in zip(tables, cameras):
            origin, up = camera_frame(float(d), float(az), float(el), float(roll))
            params["to_world"] = T().look_at(origin=origin.tolist(), target=[0.0, 0.0, 0.0], up=up.tolist())
            params.update()
        return sensor

    # -- rendering ------------------------------------------------------------------------------
    def _groups(self, s: np.ndarray) -> list[np.ndarray]:
        """Indices of queries that can share a pass: equal lighting and the same ground visibility."""
        above = self._camera_above_ground(s)
        if not self.batch_cameras:
            return [np.array([j]) for j in range(len(s))]
        keys: dict[tuple, list[int]] = {}
        for j in range(len(s)):
            keys.setdefault((tuple(np.round(s[j, LIGHTING], 9)), bool(above[j])), []).append(j)
        groups = []
        for members in keys.values():
            groups += [np.array(members[i:i + self.max_batch]) for i in range(0, len(members), self.max_batch)]
        return groups

    def _camera_above_ground(self, s: np.ndarray) -> np.ndarray:
        height = s[:, 8] * np.sin(np.radians(s[:, 10]))
        return height > self._lowest + 1e-3

    def render(self, s: np.ndarray, masks: bool = False) -> np.ndarray:
        """Images ``[q, H, W, 3]`` in [0, 1] (or object masks ``[q, H, W]`` bool) of the current
        object under conditions ``s`` ``[q, 12]`` (factor units)."""
        q, size = len(s), self.size
        out = np.empty((q, size, size) if masks else (q, size, size, 3), np.float32 if not masks else bool)
        above = self._camera_above_ground(s)
        for group in self._groups(s):
            self._place_ground(bool(above[group[0]]) and not masks)
            self._set_lighting(s[group[0]])
            sensor = self._aim(len(group), s[group, 8:12], alpha=masks)
            if masks:
                image = np.asarray(self.mi.render(self.scene, sensor=sensor, integrator=self._mask_integrator,
                                                  spp=MASK_SPP, seed=self.seed))
                tiles = image[..., 3] >= 0.5
            else:
                tiles = srgb(np.asarray(self.mi.render(self.scene, sensor=sensor, spp=self.spp,
                                                       seed=self.seed))[..., :3] * self.exposure)
            # a batch film is the cameras' images side by side: [H, k*W, ...] -> [k, H, W, ...]
            tiles = tiles.reshape(size, len(group), size, *tiles.shape[2:]).swapaxes(0, 1)
            out[group] = tiles
        return out
