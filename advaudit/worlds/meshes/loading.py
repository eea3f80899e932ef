"""Load meshes with trimesh, centre them and scale them to the unit sphere, and cache the result.

A normalised mesh is ``vertices`` ``[V, 3]`` float32 (y up, bounding-box centre at the origin,
farthest vertex at distance 1) and ``faces`` ``[F, 3]`` int32. The cache is one ``.npz`` per
mesh, keyed by the file's absolute path, size, modification time, the up axis and whether it was
rescaled, so an edited file is reloaded. Errors from the readers propagate; MeshWorld names,
skips and counts the files that fail.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advaudit.errors import AdvauditError

CACHE_VERSION = 1


@dataclass(frozen=True)
class NormalisedMesh:
    """``vertices`` ``[V, 3]`` float32 inside the unit sphere and ``faces`` ``[F, 3]`` int32."""

    vertices: np.ndarray
    faces: np.ndarray

    @property
    def lowest(self) -> float:
        """The smallest y of any vertex (where the ground plane touches the object)."""
        return float(self.vertices[:, 1].min())


def _to_y_up(vertices: np.ndarray, up_axis: str) -> np.ndarray:
    if up_axis == "y":
        return vertices
    if up_axis == "z":  # (x, y, z) z-up -> (x, z, -y) y-up
        return np.stack([vertices[:, 0], vertices[:, 2], -vertices[:, 1]], 1)
    raise AdvauditError(f"up_axis={up_axis!r}; use y (ShapeNet, glTF) or z (ModelNet, most CAD)")


def normalise(vertices: np.ndarray, faces: np.ndarray, up_axis: str = "y", rescale: bool = True) -> NormalisedMesh:
    """Rotate to y up, centre the bounding box at 0 and scale the farthest vertex to distance 1
    (``rescale=False``: only rotate, for meshes already placed inside the unit sphere)."""
    v = _to_y_up(np.asarray(vertices, dtype=np.float64), up_axis)
    if not rescale:
        return NormalisedMesh(v.astype(np.float32), np.asarray(faces, dtype=np.int32))
    v = v - (v.min(0) + v.max(0)) / 2
    radius = float(np.linalg.norm(v, axis=1).max())
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError("degenerate mesh (all vertices at one point)")
    return NormalisedMesh((v / radius).astype(np.float32), np.asarray(faces, dtype=np.int32))


def read_mesh(path: Path, up_axis: str = "y", rescale: bool = True) -> NormalisedMesh:
    """Load any trimesh-readable file (scenes are flattened into one mesh) and normalise it."""
    import trimesh  # trimesh: only the mesh world needs it

    mesh = trimesh.load(str(path), force="mesh", process=False)
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError("no triangles in the file")
    vertices, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    if not np.isfinite(vertices).all():
        raise ValueError("non-finite vertex coordinates")
    return normalise(vertices, faces, up_axis, rescale)


def _cache_path(cache_dir: Path, path: Path, up_axis: str, rescale: bool) -> Path:
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{up_axis}|{rescale}|{CACHE_VERSION}"
    return cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"


def load_mesh(path: Path, up_axis: str = "y", cache_dir: Path | None = None,
              rescale: bool = True) -> NormalisedMesh:
    """:func:`read_mesh` through the on-disk cache (when ``cache_dir`` is given)."""
    cached = _cache_path(cache_dir, path, up_axis, rescale) if cache_dir is not None else None
    if cached is not None and cached.exists():
        with np.load(cached) as stored:
            return NormalisedMesh(stored["vertices"], stored["faces"])
    mesh = read_mesh(path, up_axis, rescale)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp.npz")
        np.savez(tmp, vertices=mesh.vertices, faces=mesh.faces)
        tmp.replace(cached)
    return mesh
