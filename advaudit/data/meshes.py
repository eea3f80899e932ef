"""``dataset=meshes``: MeshWorld (Mitsuba) renders for training targets, m per instance, cached.

The same protocol as ``dataset=shapes`` (the paper's: each training object rendered ``m`` times
under uniformly random Table-1 factors; held-out objects for validation and test under the full
bounds; items carry ``instance`` and every factor value as attributes, so the bias options apply).
Only the world differs, so the rendering, caching and splitting code is ShapesDataModule's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from advaudit.data.base import ArrayDataModule
from advaudit.data.shapes import ShapesDataModule
from advaudit.worlds.meshes import MeshWorld


class MeshesDataModule(ShapesDataModule):
    """Rendered MeshWorld splits.

    Args:
        m: renders per training instance (validation / test instances get ``m_eval`` each).
        image_size: the renders' side in pixels (as ``dataset=shapes``; experiments set it).
        world: MeshWorld arguments (``root``, ``image_size``, ``spp``, ``instances_per_class``, ...;
            see :class:`~advaudit.worlds.meshes.MeshWorld`).
        factors: training-time factor bounds overrides (validation and test keep the world's).
        eval_factors: factor bounds overrides for validation and test.
        cache_dir: where rendered splits (and normalised meshes) are cached.
        fresh: new random training conditions every epoch (as ``dataset=shapes``).
    """

    def __init__(self, m: int = 10, m_eval: int = 10, image_size: int = 32, world: Mapping[str, Any] | None = None,
                 factors: Mapping[str, Any] | None = None, eval_factors: Mapping[str, Any] | None = None,
                 cache_dir: str | None = None, fresh: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("val_fraction", 0.0)
        ArrayDataModule.__init__(self, **kwargs)  # ShapesDataModule.__init__ would build a ShapeWorld
        world_args = {"cache_dir": cache_dir, **dict(world or {}), "image_size": int(image_size)}
        self._configure(MeshWorld(**world_args), m, m_eval, factors, eval_factors, cache_dir, fresh)
        files = [(r.name, r.path.stat().st_size, r.path.stat().st_mtime_ns) for r in self.world.records]
        self.key = hashlib.sha256(json.dumps({
            "world": "meshes", "m": self.m, "m_eval": self.m_eval,
            "world_args": {k: v for k, v in world_args.items() if k not in ("cache_dir", "device", "threads")},
            "files": files, "classes": self.world.class_names,
            "factors": [(f.name, f.low, f.high) for f in self.train_factors],
            "eval_factors": [(f.name, f.low, f.high) for f in self.eval_factors], "seed": self.seed,
            "fresh": self.fresh, "version": 1}, sort_keys=True, default=str).encode()).hexdigest()[:16]
