"""MeshWorld: real triangle meshes (ShapeNetCore, ModelNet, or any folder of meshes) rendered by
Mitsuba 3 under the 12 factors of the examiner paper's Table 1 (the same factor names and bounds
as ShapeWorld, so examiners, configs and experiments carry over)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from advaudit.core.progress import progress
from advaudit.config.ranges import require_within
from advaudit.errors import require
from advaudit.worlds.meshes.export_shapes import export_shapes
from advaudit.worlds.meshes.layouts import MeshRecord, discover
from advaudit.worlds.meshes.loading import NormalisedMesh, load_mesh
from advaudit.worlds.meshes.renderer import MitsubaRenderer
from advaudit.worlds.protocol import Instances, check_in_bounds, configure_factors, unit_to_factor
from advaudit.worlds.references import SHAPE_GROUPS, SHAPE_REFERENCES
from advaudit.worlds.settings import MeshWorldConf
from advaudit.worlds.shapes.world import DEFAULT_FACTORS, hsv_to_rgb
from advaudit.runtime import resolve_device

log = logging.getLogger(__name__)
SPLITS = ("train", "val", "test")
BUILTIN = "builtin"


def _unit_hash(*parts: Any) -> float:
    """A number in [0, 1) fixed by ``parts`` (stable across runs and machines)."""
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:12], 16) / 16 ** 12


def builtin_root(cache_dir: str | Path | None, instances_per_class: Mapping[str, int], seed: int) -> Path:
    """ShapeWorld's objects exported as meshes under ``cache_dir`` (exported on first use)."""
    counts = {s: int(instances_per_class.get(s, 0)) for s in SPLITS}
    base = Path(cache_dir) if cache_dir else Path.home() / ".cache" / "advaudit"
    root = base / f"shapeworld-meshes-s{seed}-{counts['train']}-{counts['val']}-{counts['test']}"
    if not (root / "manifest.json").exists():
        log.info("exporting ShapeWorld's objects as meshes to %s", root)
        tmp = root.with_name(root.name + ".tmp")
        export_shapes(tmp, counts, seed)
        tmp.replace(root) if not root.exists() else None
    return root


#: the settings' defaults (:class:`~advaudit.worlds.settings.MeshWorldConf`, their one declaration)
_SETTINGS = MeshWorldConf()


class MeshWorld:
    """Meshes ``z`` (class, file, albedo) rendered by Mitsuba under conditions ``s``.

    Args:
        root: a mesh folder (ShapeNetCore v2, ModelNet or ``<class>/<meshes>``; see ``layouts``),
            or ``builtin``: ShapeWorld's objects exported as meshes into ``cache_dir``.
        layout: ``auto`` | ``shapenet`` | ``modelnet`` | ``plain``.
        classes: class names (or ShapeNet synset ids) to use; default all.
        split_fractions: ``{train, val, test}`` shares for layouts without a split; ModelNet keeps
            its train/test and carves ``val`` out of train; a manifest's splits are kept.
        instances_per_class: optional caps ``{train, val, test}`` on instances per class (a seeded
            random subset), e.g. to use 10 test objects per ShapeNet class.
        builtin_instances: instances per class exported for ``root=builtin``.
        seed: the split shuffle and the per-mesh colours.
        up_axis: ``auto`` (z for ModelNet, else y), ``y`` or ``z``.
        image_size, spp, max_depth, object_radius, ambient, exposure, ground, batch_cameras:
            the renderer (see :class:`~advaudit.worlds.meshes.renderer.MitsubaRenderer`).
        factors: overrides ``{name: [low, high] | value}`` of the default bounds (ShapeWorld's ``DEFAULT_FACTORS``).
        cache_dir: where normalised meshes (and the built-in export) are cached.
        device: ``cpu``/``cuda``/``auto``: Mitsuba's ``llvm_ad_rgb`` or ``cuda_ad_rgb`` variant.
        threads: Dr.Jit CPU threads (null: all cores).
    """

    def __init__(self, root: str = _SETTINGS.root, image_size: int = _SETTINGS.image_size, spp: int = _SETTINGS.spp,
                 max_depth: int = _SETTINGS.max_depth, layout: str = _SETTINGS.layout,
                 classes: Sequence[str] | None = None, split_fractions: Mapping[str, float] | None = None,
                 instances_per_class: Mapping[str, int | None] | None = None,
                 builtin_instances: Mapping[str, int] | None = None, seed: int = _SETTINGS.seed,
                 up_axis: str = _SETTINGS.up_axis, object_radius: float = _SETTINGS.object_radius,
                 ambient: float = _SETTINGS.ambient, exposure: float = _SETTINGS.exposure,
                 ground: bool = _SETTINGS.ground, batch_cameras: bool = _SETTINGS.batch_cameras,
                 factors: Mapping[str, Any] | None = None, cache_dir: str | None = None, device: str = "cpu",
                 threads: int | None = None) -> None:
        require_within(MeshWorldConf, "image_size", image_size, "world.image_size")
        require(int(spp) >= 1, f"spp={spp}; use >= 1 samples per pixel")
        self.image_size = int(image_size)
        self.image_shape = (3, self.image_size, self.image_size)
        self.seed = int(seed)
        self.factors = configure_factors(DEFAULT_FACTORS, factors)
        self.device = resolve_device(device)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        if str(root) == BUILTIN:
            root = builtin_root(cache_dir, {**_SETTINGS.builtin_instances, **dict(builtin_instances or {})}, seed)
        self.root = Path(root)
        self.layout, by_class = discover(self.root, classes, layout)
        self.up_axis = ("z" if self.layout == "modelnet" else "y") if up_axis == "auto" else up_axis
        manifest = self.root / "manifest.json"
        # meshes exported already normalised (export_shapes) keep their coordinates exactly
        self.rescale = not (manifest.exists() and json.loads(manifest.read_text()).get("normalised", False))
        self.class_names = list(by_class)
        fractions = {**_SETTINGS.split_fractions, **dict(split_fractions or {})}
        require(all(fractions[s] >= 0 for s in SPLITS) and sum(fractions[s] for s in SPLITS) > 0,
                f"split_fractions={dict(fractions)} must be >= 0 and not all 0")
        caps = {s: None for s in SPLITS} | dict(instances_per_class or {})
        self.records: list[MeshRecord] = []
        self._split_index: dict[str, list[int]] = {s: [] for s in SPLITS}
        for records in by_class.values():
            for split, members in self._assign_splits(records, fractions).items():
                if caps.get(split) is not None:
                    members = members[: int(caps[split])]
                self._split_index[split] += range(len(self.records), len(self.records) + len(members))
                self.records += members
        self.skipped: list[str] = []  # "<path>: <reason>" for every mesh that did not load
        self._meshes: dict[int, NormalisedMesh | None] = {}
        self._renderer_args = dict(image_size=self.image_size, spp=int(spp), max_depth=int(max_depth),
                                   object_radius=float(object_radius), ambient=float(ambient),
                                   exposure=float(exposure), ground=bool(ground), batch_cameras=bool(batch_cameras),
                                   device=self.device.type, threads=threads, seed=self.seed)
        self._renderer: MitsubaRenderer | None = None

    # -- instances ------------------------------------------------------------------------------
    def _assign_splits(self, records: list[MeshRecord], fractions: Mapping[str, float]) -> dict[str, list[MeshRecord]]:
        """Records of one class by split: the dataset's own split where it has one, else seeded shares."""
        order = sorted(records, key=lambda r: _unit_hash("split", self.seed, r.name))
        out: dict[str, list[MeshRecord]] = {s: [r for r in order if r.split == s] for s in SPLITS}
        unassigned = [r for r in order if r.split not in SPLITS]
        if out["train"] and not out["val"] and fractions["val"] > 0:  # ModelNet: val carved from train
            n_val = max(1, round(len(out["train"]) * fractions["val"] / (fractions["train"] + fractions["val"])))
            out["val"], out["train"] = out["train"][:n_val], out["train"][n_val:]
        total = sum(fractions[s] for s in SPLITS)
        n = len(unassigned)
        bounds = np.round(np.cumsum([fractions[s] / total * n for s in SPLITS])).astype(int)
        start = 0
        for split, end in zip(SPLITS, bounds):
            out[split] += unassigned[start:end]
            start = end
        return out

    def mesh(self, index: int) -> NormalisedMesh | None:
        """The normalised mesh of record ``index`` (loaded once; ``None`` when it does not load)."""
        if index not in self._meshes:
            record = self.records[index]
            try:
                self._meshes[index] = load_mesh(record.path, self.up_axis, self.cache_dir / "meshes"
                                                if self.cache_dir else None, self.rescale)
            except Exception as error:  # a broken file: named, skipped and counted
                self._meshes[index] = None
                self.skipped.append(f"{record.path}: {type(error).__name__}: {error}".splitlines()[0])
                log.warning("skipped mesh %s", self.skipped[-1])
        return self._meshes[index]

    def _albedo(self, record: MeshRecord) -> list[float]:
        if record.albedo is not None:
            return list(record.albedo)
        h, s, v = (torch.tensor([_unit_hash(k, self.seed, record.name)]) for k in ("hue", "sat", "val"))
        return hsv_to_rgb(h, 0.35 + 0.55 * s, 0.45 + 0.5 * v)[0].tolist()

    def reference_values(self) -> dict[str, float | None]:
        """Each factor's reference, or None where it has none (:data:`advaudit.worlds.references.SHAPE_REFERENCES`)."""
        return {f.name: SHAPE_REFERENCES.get(f.name) for f in self.factors}

    def factor_groups(self) -> dict[str, list[str]]:
        """The camera's factors and the lights' energies and distance (:data:`advaudit.worlds.references.SHAPE_GROUPS`)."""
        return {name: list(members) for name, members in SHAPE_GROUPS.items()}

    def instances(self, split: str) -> Instances:
        require(split in SPLITS, f"unknown split {split!r}; use {list(SPLITS)}")
        index = self._split_index[split]
        fresh = sum(i not in self._meshes for i in index)
        loaded = [i for i in progress(index, desc=f"loading meshes/{split}", unit="mesh", disable=fresh < 200)
                  if self.mesh(i) is not None]
        failed = len(index) - len(loaded)
        if failed:
            log.warning("%s: %d of %d meshes did not load and are skipped (world.skipped lists them)",
                        split, failed, len(index))
        require(loaded, f"no loadable meshes in split {split!r} of {self.root} ({failed} failed to load: "
                f"{self.skipped[:3]}); check the files or split_fractions")
        labels = torch.tensor([self.class_names.index(self.records[i].class_name) for i in loaded])
        albedo = torch.tensor([self._albedo(self.records[i]) for i in loaded], dtype=torch.float32)
        ids = torch.tensor(loaded, dtype=torch.long)
        return Instances({"mesh": ids.clone(), "albedo": albedo}, labels, ids).to(self.device)

    def names(self, z: Instances) -> list[str]:
        """The dataset names (``<class>/<model>``) of instances ``z``."""
        return [self.records[int(i)].name for i in z.data["mesh"]]

    # -- rendering ------------------------------------------------------------------------------
    @property
    def renderer(self) -> MitsubaRenderer:
        if self._renderer is None:
            self._renderer = MitsubaRenderer(**self._renderer_args)
        return self._renderer

    def render(self, z: Instances, s: Tensor) -> Tensor:
        """``s`` ``[N, q, 12]`` in factor units -> ``[N*q, 3, H, W]`` in [0, 1]; row ``n*q + j`` is
        instance ``n`` under ``s[n, j]``. Values outside the factor bounds are refused."""
        images = self._render(z, s, masks=False)
        return torch.from_numpy(images).permute(0, 3, 1, 2).contiguous().to(self.device)

    def render_masks(self, z: Instances, s: Tensor) -> Tensor:
        """Object masks ``[N*q, H, W]`` (True where a camera ray hits the object)."""
        return torch.from_numpy(self._render(z, s, masks=True)).to(self.device)

    def _render(self, z: Instances, s: Tensor, masks: bool) -> np.ndarray:
        require(s.dim() == 3 and len(s) == len(z), f"s must be [N={len(z)}, q, {len(self.factors)}], "
                f"got {list(s.shape)}")
        check_in_bounds(s, self.factors)
        n, q, _ = s.shape
        conditions = s.detach().to("cpu", torch.float64).numpy()
        meshes, albedo = z.data["mesh"].tolist(), z.data["albedo"].cpu().numpy()
        shape = (n * q, self.image_size, self.image_size) + (() if masks else (3,))
        out = np.empty(shape, bool if masks else np.float32)
        renderer = self.renderer
        for i in range(n):
            mesh = self.mesh(meshes[i])
            require(mesh is not None, f"instance {meshes[i]} ({self.records[meshes[i]].path}) did not load")
            renderer.set_object(mesh, albedo[i])
            out[i * q:(i + 1) * q] = renderer.render(conditions[i], masks=masks)
        return out

    def random_conditions(self, n: int, q: int, generator: torch.Generator | None = None) -> Tensor:
        """Uniform random conditions ``[n, q, 12]`` in factor units."""
        return unit_to_factor(torch.rand(n, q, len(self.factors), generator=generator), self.factors)
