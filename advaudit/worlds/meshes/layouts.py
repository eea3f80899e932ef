"""Find the meshes of a dataset folder and their classes (and splits, where the layout has them).

Three layouts are recognised, in this order:

- **ShapeNetCore v2**: ``<root>/<synset id>/<model id>/models/model_normalized.obj``; class names
  come from the synset ids (:data:`SHAPENET_SYNSETS`; an unknown id is kept as its own name).
- **ModelNet** (10/40): ``<root>/<class>/{train,test}/*.off``; its train/test split is kept.
- **plain**: ``<root>/<class>/*.{obj,ply,stl,glb,gltf,off}`` (files directly in the class folder).

A ``manifest.json`` at the root (written by ``export_shapes``) may give per-mesh ``split`` and
``albedo``; its entries override what the layout says, and its ``classes`` list orders the
classes (otherwise sorted by name).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from advaudit.errors import AdvauditError, require

MESH_SUFFIXES = (".obj", ".ply", ".stl", ".glb", ".gltf", ".off")
SHAPENET_FILE = Path("models") / "model_normalized.obj"
_SYNSET = re.compile(r"^\d{8}$")

# ShapeNetCore v2's 55 categories (synset id -> the name used as class name)
SHAPENET_SYNSETS = {
    "02691156": "airplane", "02747177": "trash_bin", "02773838": "bag", "02801938": "basket",
    "02808440": "bathtub", "02818832": "bed", "02828884": "bench", "02843684": "birdhouse",
    "02871439": "bookshelf", "02876657": "bottle", "02880940": "bowl", "02924116": "bus",
    "02933112": "cabinet", "02942699": "camera", "02946921": "can", "02954340": "cap",
    "02958343": "car", "02992529": "cellphone", "03001627": "chair", "03046257": "clock",
    "03085013": "keyboard", "03207941": "dishwasher", "03211117": "display", "03261776": "earphone",
    "03325088": "faucet", "03337140": "file_cabinet", "03467517": "guitar", "03513137": "helmet",
    "03593526": "jar", "03624134": "knife", "03636649": "lamp", "03642806": "laptop",
    "03691459": "loudspeaker", "03710193": "mailbox", "03759954": "microphone", "03761084": "microwave",
    "03790512": "motorbike", "03797390": "mug", "03928116": "piano", "03938244": "pillow",
    "03948459": "pistol", "03991062": "pot", "04004475": "printer", "04074963": "remote",
    "04090263": "rifle", "04099429": "rocket", "04225987": "skateboard", "04256520": "sofa",
    "04330267": "stove", "04379243": "table", "04401088": "telephone", "04460130": "tower",
    "04468005": "train", "04530566": "vessel", "04554684": "washer",
}
SYNSET_OF = {name: synset for synset, name in SHAPENET_SYNSETS.items()}


@dataclass(frozen=True)
class MeshRecord:
    """One mesh file: its class, a stable name, and the split its dataset assigns (or ``None``)."""

    path: Path
    class_name: str
    name: str
    split: str | None = None
    albedo: tuple[float, float, float] | None = field(default=None, compare=False)


def detect_layout(root: Path) -> str:
    """``shapenet``, ``modelnet`` or ``plain`` (see the module docstring)."""
    folders = [d for d in sorted(root.iterdir()) if d.is_dir()]
    require(folders, f"mesh folder {root} has no class sub-folders; expected <class>/<meshes> "
            "(plain), <synset>/<model>/models/model_normalized.obj (ShapeNetCore) or "
            "<class>/{train,test}/*.off (ModelNet)")
    if any(_SYNSET.match(d.name) and any(d.glob(f"*/{SHAPENET_FILE.as_posix()}")) for d in folders):
        return "shapenet"
    if any((d / "train").is_dir() or (d / "test").is_dir() for d in folders):
        return "modelnet"
    return "plain"


def _class_folders(root: Path, classes: set[str] | None, names: Mapping[str, str] | None = None
                   ) -> Iterator[tuple[Path, str]]:
    """``(folder, class name)`` for the class folders of ``root`` that ``classes`` selects (by
    class name or folder name); ``names`` maps folder names to class names (ShapeNet synsets)."""
    for folder in sorted(d for d in root.iterdir() if d.is_dir()):
        name = (names or {}).get(folder.name, folder.name)
        if classes is None or name in classes or folder.name in classes:
            yield folder, name


def _is_mesh(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in MESH_SUFFIXES


def _shapenet(root: Path, classes: set[str] | None) -> dict[str, list[MeshRecord]]:
    return {name: [MeshRecord(p, name, f"{folder.name}/{p.parent.parent.name}")
                   for p in sorted(folder.glob(f"*/{SHAPENET_FILE.as_posix()}"))]
            for folder, name in _class_folders(root, classes, SHAPENET_SYNSETS)}


def _modelnet(root: Path, classes: set[str] | None) -> dict[str, list[MeshRecord]]:
    return {name: [MeshRecord(p, name, f"{name}/{split}/{p.stem}", split)
                   for split in ("train", "test") for p in sorted((folder / split).glob("*")) if _is_mesh(p)]
            for folder, name in _class_folders(root, classes)}


def _plain(root: Path, classes: set[str] | None) -> dict[str, list[MeshRecord]]:
    return {name: [MeshRecord(p, name, f"{name}/{p.stem}") for p in sorted(folder.iterdir()) if _is_mesh(p)]
            for folder, name in _class_folders(root, classes)}


def _apply_manifest(root: Path, found: dict[str, list[MeshRecord]]) -> dict[str, list[MeshRecord]]:
    path = root / "manifest.json"
    if not path.exists():
        return found
    try:
        manifest = json.loads(path.read_text())
        entries = manifest["meshes"]
    except (ValueError, KeyError) as error:
        raise AdvauditError(f"{path} is not a mesh manifest ({error}); expected "
                            '{"meshes": {"<class>/<file>": {"split": ..., "albedo": [r, g, b]}}}') from error
    out = {}
    for name, records in found.items():
        updated = []
        for r in records:
            entry = entries.get(r.path.relative_to(root).as_posix(), {})
            albedo = tuple(float(c) for c in entry["albedo"]) if "albedo" in entry else r.albedo
            updated.append(MeshRecord(r.path, r.class_name, r.name, entry.get("split", r.split), albedo))
        out[name] = updated
    order = [c for c in manifest.get("classes", []) if c in out]  # e.g. ShapeWorld's class order
    return {name: out[name] for name in order + sorted(set(out) - set(order))}


def discover(root: str | Path, classes: Sequence[str] | None = None,
             layout: str = "auto") -> tuple[str, dict[str, list[MeshRecord]]]:
    """The layout used and ``{class name: [MeshRecord, ...]}`` (classes sorted by name).

    Raises :class:`AdvauditError` for a missing folder, an unknown layout name, a requested class
    that is not there, or a class folder without meshes.
    """
    root = Path(root).expanduser()
    require(root.is_dir(), f"mesh folder {root} does not exist; set world.root to a folder of meshes "
            "(`python -m advaudit.worlds.meshes.export_shapes <dir>` writes a built-in one)")
    layout = detect_layout(root) if layout == "auto" else layout
    readers = {"shapenet": _shapenet, "modelnet": _modelnet, "plain": _plain}
    require(layout in readers, f"unknown mesh layout {layout!r}; use auto, {', '.join(readers)}")
    wanted = set(classes) if classes else None
    found = readers[layout](root, wanted)
    if wanted is not None:
        missing = sorted(c for c in wanted if c not in found and SHAPENET_SYNSETS.get(c) not in found)
        require(not missing, f"classes {missing} are not in {root} (layout {layout}); it has {sorted(found)}")
    empty = sorted(name for name, records in found.items() if not records)
    require(not empty, f"class folders without meshes in {root} (layout {layout}): {empty}; add meshes "
            f"({', '.join(MESH_SUFFIXES)}), delete the folders, or list the classes to use in world.classes")
    require(found, f"no class folders with meshes in {root}")
    return layout, _apply_manifest(root, dict(sorted(found.items())))
