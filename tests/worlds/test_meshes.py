"""MeshWorld: layouts, loading, errors, and Mitsuba renders that agree with ShapeWorld's geometry."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.worlds.meshes import MeshWorld
from advaudit.worlds.meshes.export_shapes import export_shapes
from advaudit.worlds.meshes.layouts import discover
from advaudit.worlds.meshes.loading import load_mesh
from advaudit.worlds.meshes.mitsuba_setup import configure_llvm_path
from advaudit.worlds.protocol import unit_to_factor
from advaudit.worlds.shapes import DEFAULT_FACTORS, ShapeWorld

trimesh = pytest.importorskip("trimesh")
SIZE = 16


def _write(path: Path, mesh) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    mesh.export(path)
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ShapeWorld's objects as meshes: 1 train, 1 val, 1 test instance per class."""
    root = tmp_path_factory.mktemp("shapes_meshes")
    export_shapes(root, {"train": 1, "val": 1, "test": 1}, seed=0)
    return root


@pytest.fixture(scope="module")
def world(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> MeshWorld:
    return MeshWorld(str(exported), image_size=SIZE, spp=4, threads=1,
                     cache_dir=str(tmp_path_factory.mktemp("mesh_cache")))


def test_three_layouts_are_read_with_their_classes_and_splits(tmp_path: Path) -> None:
    box, ball = trimesh.creation.box(), trimesh.creation.icosphere(1)
    _write(tmp_path / "shapenet/03797390/m1/models/model_normalized.obj", box)
    _write(tmp_path / "shapenet/04379243/t1/models/model_normalized.obj", ball)
    _write(tmp_path / "modelnet/chair/train/chair_0001.off", box)
    _write(tmp_path / "modelnet/chair/test/chair_0002.off", box)
    _write(tmp_path / "modelnet/desk/test/desk_0001.off", ball)
    for suffix in ("obj", "ply", "stl", "glb", "off"):
        _write(tmp_path / f"plain/thing/a.{suffix}", ball)
    layout, found = discover(tmp_path / "shapenet")
    assert layout == "shapenet" and list(found) == ["mug", "table"]
    layout, found = discover(tmp_path / "modelnet")
    assert layout == "modelnet" and [r.split for r in found["chair"]] == ["train", "test"]
    layout, found = discover(tmp_path / "plain")
    assert layout == "plain" and len(found["thing"]) == 5
    meshes = [load_mesh(r.path) for r in found["thing"]]
    assert all(abs(np.linalg.norm(m.vertices, axis=1).max() - 1) < 1e-5 for m in meshes)  # unit sphere


def test_loading_centres_scales_turns_z_up_and_caches(tmp_path: Path) -> None:
    tall = trimesh.creation.box(extents=(1.0, 1.0, 4.0))  # tall along z
    tall.apply_translation((5.0, 3.0, 2.0))
    path = _write(tmp_path / "tall.ply", tall)
    mesh = load_mesh(path, up_axis="z", cache_dir=tmp_path / "cache")
    extent = mesh.vertices.max(0) - mesh.vertices.min(0)
    assert np.allclose(mesh.vertices.max(0) + mesh.vertices.min(0), 0, atol=1e-6)  # centred
    assert extent[1] == pytest.approx(extent.max()) and extent[1] > 3 * extent[0]  # z became y (up)
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    again = load_mesh(path, up_axis="z", cache_dir=tmp_path / "cache")
    assert np.array_equal(again.vertices, mesh.vertices) and np.array_equal(again.faces, mesh.faces)


def test_bad_folders_and_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(AdvauditError, match="does not exist"):
        discover(tmp_path / "nowhere")
    _write(tmp_path / "data/cup/a.obj", trimesh.creation.box())
    (tmp_path / "data/empty").mkdir()
    with pytest.raises(AdvauditError, match=r"without meshes.*\['empty'\]"):
        discover(tmp_path / "data")
    with pytest.raises(AdvauditError, match=r"\['plate'\] are not in"):
        discover(tmp_path / "data", classes=["plate"])
    (tmp_path / "data/empty").rmdir()
    for i in range(4):
        _write(tmp_path / f"data/cup/b{i}.obj", trimesh.creation.icosphere(1))
    (tmp_path / "data/cup/broken.obj").write_text("v 0 0 0\nthis is not a mesh\n")
    world = MeshWorld(str(tmp_path / "data"), split_fractions={"train": 1.0, "val": 0.0, "test": 0.0})
    z = world.instances("train")
    assert len(z) == 5 and len(world.skipped) == 1 and "broken.obj" in world.skipped[0]


def test_llvm_that_is_too_old_or_missing_is_refused_with_the_package_name(monkeypatch, tmp_path: Path) -> None:
    old = tmp_path / "libLLVM-15.so"
    old.write_bytes(b"")
    monkeypatch.setenv("DRJIT_LIBLLVM_PATH", str(old))
    with pytest.raises(AdvauditError, match="LLVM 15.*libllvm19"):
        configure_llvm_path()
    monkeypatch.setenv("DRJIT_LIBLLVM_PATH", str(tmp_path / "missing.so"))
    with pytest.raises(AdvauditError, match="does not exist.*apt-get install -y libllvm19"):
        configure_llvm_path()


def test_export_keeps_shapeworld_instances_classes_and_splits(exported: Path, world: MeshWorld) -> None:
    assert world.class_names == ShapeWorld().class_names  # ShapeWorld's order, from the manifest
    manifest = json.loads((exported / "manifest.json").read_text())["meshes"]
    shapes_test = ShapeWorld(instances_per_class={"test": 1}).instances("test")
    z = world.instances("test")
    assert z.labels.tolist() == shapes_test.labels.tolist()
    ids = [manifest[Path(world.records[int(i)].path).relative_to(exported).as_posix()]["shapeworld_id"]
           for i in z.ids]
    assert ids == shapes_test.ids.tolist()
    assert torch.allclose(z.data["albedo"], shapes_test.data["albedo"], atol=1e-5)
    assert not set(world.instances("train").ids.tolist()) & set(z.ids.tolist())


def test_renders_are_deterministic_in_range_and_row_ordered(world: MeshWorld) -> None:
    z = world.instances("test").subset(torch.tensor([0, 7]))
    s = world.random_conditions(2, 3, torch.Generator().manual_seed(0))
    x = world.render(z, s)
    assert x.shape == (6, 3, SIZE, SIZE) and 0 <= float(x.min()) and float(x.max()) <= 1
    assert torch.equal(x, world.render(z, s))
    assert torch.equal(world.render(z.subset(torch.tensor([1])), s[1:2])[2], x[5])  # row n*q + j
    with pytest.raises(AdvauditError, match="outside its bounds"):
        world.render(z, s + 1000)


def test_silhouettes_match_shapeworld_under_the_same_conditions(exported: Path) -> None:
    """The same object, camera and roll give the same silhouette in both worlds (geometry agrees)."""
    world = MeshWorld(str(exported), image_size=32, threads=1)
    shapes = ShapeWorld(image_size=32, instances_per_class={"test": 1})
    z_mesh, z_shape = world.instances("test"), shapes.instances("test")
    s = shapes.random_conditions(len(z_shape), 2, torch.Generator().manual_seed(3))
    s[..., 8] = s[..., 8].clamp(min=2.0)  # not so close that the silhouette fills the frame
    a, b = world.render_masks(z_mesh, s), shapes.render_masks(z_shape, s)

    def iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a & b).flatten(1).sum(1) / (a | b).flatten(1).sum(1).clamp_min(1)

    assert float(iou(a, b).median()) > 0.9 and float(iou(a, b).min()) > 0.75, iou(a, b)
    assert float(iou(a.flip(2), b).median()) < 0.8  # a mirrored camera would fail


def test_every_factor_visibly_changes_the_image(world: MeshWorld) -> None:
    z = world.instances("test").subset(torch.tensor([6]))  # a table
    base = torch.full((1, 1, 12), 0.5)
    base[..., :3] = 0.3  # a tilted sun, so its angles show
    base[..., 3] = 0.3  # of 1.5 W/m2: a 1 kW point light at 8 m adds up to 1.2 W/m2
    base[..., 5] = 0.0  # the point light at 8 m, above the ground
    base[..., 7] = 0.75
    base[..., 10] = 0.65  # camera above the ground
    moved = base.repeat(1, 12, 1)
    for i in range(12):
        moved[0, i, i] = 0.95 if float(base[0, 0, i]) <= 0.5 else 0.2
    x0 = world.render(z, unit_to_factor(base, DEFAULT_FACTORS))
    x = world.render(z, unit_to_factor(moved, DEFAULT_FACTORS))
    change = (x - x0).abs().flatten(1).amax(1)
    for factor, delta in zip(DEFAULT_FACTORS, change.tolist()):
        assert delta > 0.05, f"{factor.name} does not visibly change the image ({delta:.3f})"


def test_batched_cameras_render_what_single_cameras_do(world: MeshWorld, exported: Path, tmp_path: Path) -> None:
    unbatched = MeshWorld(str(exported), image_size=SIZE, spp=64, threads=1, batch_cameras=False)
    batched = MeshWorld(str(exported), image_size=SIZE, spp=64, threads=1, batch_cameras=True)
    z = batched.instances("test").subset(torch.tensor([3]))
    s = batched.random_conditions(1, 4, torch.Generator().manual_seed(1))
    s[:, :, :8] = s[:, :1, :8]  # shared lighting: one pass of a 4-camera batch sensor
    s[..., 10] = 30.0
    a, b = batched.render(z, s), unbatched.render(z, s)
    assert float((a - b).abs().mean()) < 0.03  # the same images up to Monte Carlo noise
    assert float((a - b.roll(1, 0)).abs().mean()) > 2 * float((a - b).abs().mean())  # in the same order


def test_train_and_examine_on_a_shapenet_layout_folder(make_cfg, tmp_path: Path) -> None:
    """``train.py dataset=meshes`` then ``examine.py world=meshes examiner=bo`` on a ShapeNet-layout folder."""
    from advaudit.core.records import read_jsonl
    from advaudit.tasks import examine, train

    root = tmp_path / "ShapeNetCore.v2"
    export_shapes(root, {"train": 2, "val": 1, "test": 1}, layout="shapenet")
    world = [f"root={root}", "spp=2", "threads=1"]
    trained = train(make_cfg("train", ["dataset=meshes", "model=cnn", "dataset.m=2", "dataset.m_eval=1",
                                       "dataset.image_size=16", *[f"dataset.world.{w}" for w in world],
                                       "trainer.max_epochs=1",
                                       "logger=none", "callbacks=none", "+trainer.enable_progress_bar=false",
                                       "+trainer.enable_model_summary=false", f"paths.output_dir={tmp_path / 'train'}"]))
    cfg = make_cfg("examine", [f"target={trained['checkpoint']}", "audit=worst_case", "world=meshes",
                               "world.image_size=16", *[f"world.{w}" for w in world], "examiner=bo", "examiner.q=1", "examiner.adam_steps=2",
                               "audit.budget=3", "audit.report_budgets=[0,3]", "audit.selection_renders=1",
                               "logger=none", f"paths.output_dir={tmp_path / 'examine'}"])
    examine(cfg)
    steps = read_jsonl(tmp_path / "examine" / "steps.jsonl")
    assert len(steps) == 10 * 3  # one instance per ShapeNet class (best per class), 3 BO queries each
    assert len({r["label"] for r in steps}) == 10
    assert all(0.0 <= p <= 1.0 for r in steps for p in r["true_prob"])


def test_faces_wound_the_wrong_way_are_shaded_like_the_others(tmp_path: Path) -> None:
    """Real meshes (ShapeNet's too) have inverted faces; they must not render black."""
    ball = trimesh.creation.icosphere(2)
    _write(tmp_path / "ball/out.obj", ball)
    inverted = ball.copy()
    inverted.invert()
    _write(tmp_path / "inverted/in.obj", inverted)
    grey = {"albedo": [0.6, 0.6, 0.6]}
    (tmp_path / "manifest.json").write_text(json.dumps({"meshes": {"ball/out.obj": grey, "inverted/in.obj": grey}}))
    world = MeshWorld(str(tmp_path), image_size=SIZE, spp=16, threads=1,
                      split_fractions={"train": 1.0, "val": 0.0, "test": 0.0})
    z = world.instances("train")
    s = torch.tensor([[30.0, 0, 0, 4, 1, 8, 45, 45, 2.5, 30, 30, 0]]).repeat(2, 1, 1)
    x = world.render(z, s)
    assert float(x[1].mean()) > 0.9 * float(x[0].mean()) and float((x[0] - x[1]).abs().mean()) < 0.03


def test_builtin_root_exports_shapeworld_once_into_the_cache(tmp_path: Path) -> None:
    world = MeshWorld("builtin", builtin_instances={"train": 1, "val": 1, "test": 1}, cache_dir=str(tmp_path))
    manifest = world.root / "manifest.json"
    assert world.root.parent == tmp_path and world.class_names == ShapeWorld().class_names
    assert len(world.records) == 30 and len(world.instances("val")) == 10
    stamp = manifest.stat().st_mtime_ns
    again = MeshWorld("builtin", builtin_instances={"train": 1, "val": 1, "test": 1}, cache_dir=str(tmp_path))
    assert again.root == world.root and manifest.stat().st_mtime_ns == stamp  # reused, not re-exported


def test_world_and_dataset_configs_are_typed_by_their_schemas(make_cfg) -> None:
    from hydra.errors import ConfigCompositionException

    cfg = make_cfg("examine", ["world=meshes", "world.spp=4"])
    assert cfg.world.spp == 4 and cfg.world.batch_cameras is False
    assert make_cfg("train", ["dataset=meshes", "dataset.image_size=16"]).dataset.world.root == "builtin"
    with pytest.raises(ConfigCompositionException, match="spp"):
        make_cfg("examine", ["world=meshes", "world.spp=many"])
    from advaudit.validation import validate

    with pytest.raises(AdvauditError, match="sppp"):
        validate(make_cfg("examine", ["world=meshes", "+world.sppp=4", "audit=gallery"]), "examine")
