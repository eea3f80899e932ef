"""The ShapeWorld generator: trained on a few hundred RGB renders through the real Hydra config,
gated by a real-render classifier, saved and loaded safely, and fed to the fault-test audit."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.models.generators.generator import load_generator
from advaudit.models.generators.generator_training import class_agreement
from tests.conftest import compose_config
from tests.faults.test_fault_tests import brightness_target
from tests.worlds.shapes_reference import BOX

# 10 classes x 30 instances x 1 render = 300 training renders at 16 px; a 4-step epoch of a narrow GAN
TINY_GENERATOR = ["experiment=faults/train_shapes_generator", "dataset.image_size=16",
                  "dataset.instances_per_class={train:30,val:2,test:3}", "dataset.m=1", "dataset.m_eval=2",
                  "dataset.batch_size=80", "model.width=8", "model.latent_dim=16", "trainer.max_epochs=1",
                  "logger=none", "callbacks=none", "threads=1",
                  "+trainer.enable_progress_bar=false", "+trainer.enable_model_summary=false"]


def test_shapes_generator_trains_is_gated_round_trips_and_feeds_the_fault_audit(tiny_shapes_target: Path,
                                                                                tmp_path: Path) -> None:
    from advaudit.tasks import examine, train

    gate_classifier = load_target(tiny_shapes_target)
    overrides = [*TINY_GENERATOR, f"model.quality_target={tiny_shapes_target}"]
    out = tmp_path / "run"
    # a gate of 1.0 refuses a 4-step generator: no generator.pt, the refused one kept for inspection
    with pytest.raises(AdvauditError, match="failed its quality gate"):
        train(compose_config("train", [*overrides, "model.quality_gate=1.0"], tmp_path))
    assert not (out / "checkpoints" / "generator.pt").exists()
    refused = out / "checkpoints" / "generator_below_gate.pt"
    torch.load(refused, weights_only=True)  # plain data and tensors only
    generator, meta = load_generator(refused)
    quality = meta["quality"]
    assert quality["passed"] is False and quality["gate"] == 1.0
    # the recorded agreement is the loaded generator's: the weights round-trip exactly
    assert class_agreement(generator, gate_classifier) == pytest.approx(quality["class_agreement"], abs=1e-9)
    assert sorted(quality["class_agreement_by_class"]) == sorted(gate_classifier.class_names)
    assert 0.0 <= quality["classifier_real_acc"] <= 1.0
    # the world's images: 3 channels at the world's size, in [0, 1]
    with torch.no_grad():
        x = generator(generator.sample_latent(5), torch.arange(5))
    assert x.shape == (5, 3, 16, 16) and float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert list(meta["image_shape"]) == list(gate_classifier.input_shape) == [3, 16, 16]

    audit = ["audit.n_seeds=3", "audit.max_steps=8", "audit.eps=20", "audit.lr=0.1", "audit.pixel.l2.steps=4",
             "audit.pixel.linf.steps=4", f"audit.judge={tiny_shapes_target}", "logger=none"]
    with pytest.raises(AdvauditError, match="failed its quality gate"):
        examine(compose_config("examine", ["experiment=faults/shapes", f"target={tiny_shapes_target}",
                                           f"generator={refused}", *audit], tmp_path / "refused"))

    # rerun into the same run dir without a gate: it resumes (one epoch done, none left), so the same
    # generator is measured and saved as generator.pt
    result = train(compose_config("train", [*overrides, "model.quality_gate=null"], tmp_path))
    assert result["resumed_from_epoch"] == 1
    assert result["generator/class_agreement"] == pytest.approx(quality["class_agreement"], abs=1e-9)
    path = Path(result["checkpoint"])
    assert path.name == "generator.pt" and (out / "samples.png").is_file()

    # fault tests on it, both directions, against a target that tells the two classes apart by brightness
    # (so seeds of both are drawn from any generator), judged by the real-render classifier
    generator, _ = load_generator(path)
    names = gate_classifier.class_names
    source, destination = names.index("table"), names.index("chair")  # the experiment's pair
    audited = brightness_target(gate_classifier.meta, generator, source, destination, tmp_path / "brightness_target.pt")
    summary = examine(compose_config("examine", ["experiment=faults/shapes", f"target={audited}", f"generator={path}",
                                                 *audit], tmp_path / "audit"))
    assert summary["faults/both_directions"] is True and summary["faults/source"] == "table"
    assert summary["faults/generator_class_agreement"] == pytest.approx(quality["class_agreement"], abs=1e-9)
    saved = torch.load(tmp_path / "audit" / "run" / "tests.pt", weights_only=True)
    assert saved["generator_tests"].shape == (6, 3, 16, 16)
    assert saved["y0"].tolist() == [source] * 3 + [destination] * 3
    # the judge's agreement on the unperturbed seeds (the ceiling of valid_share), per direction
    kept = gate_classifier.predict_proba(saved["seeds"]).argmax(1) == saved["y0"]
    assert summary["faults/seeds/valid_share"] == pytest.approx(float(kept[:3].float().mean()))
    assert summary["faults/reverse/seeds/valid_share"] == pytest.approx(float(kept[3:].float().mean()))
    for prefix in ("", "reverse/"):
        assert summary[f"faults/{prefix}generator/success"] > 0  # a brightness change flips this target
    report = (tmp_path / "audit" / "run" / "report.md").read_text()
    assert "| reverse/seeds |" in report and "Generator quality gate" in report
    assert (tmp_path / "audit" / "run" / "generator_pairs.png").is_file()


def test_class_teacher_steers_the_generator_and_stays_frozen_and_unsaved() -> None:
    """A frozen teacher's cross-entropy on the fakes' classes falls as the generator trains on it; the
    teacher is never updated, never put in train mode (its BatchNorm statistics stay) and never saved."""
    import pytorch_lightning as pl

    from advaudit.models.generators.generator import ConditionalGenerator, GANModule, ProjectionCritic

    torch.manual_seed(0)
    generator = ConditionalGenerator(3, (3, 8, 8), latent_dim=8, width=4)
    teacher = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.BatchNorm1d(192), torch.nn.Linear(192, 3)).eval()
    frozen = {k: v.clone() for k, v in teacher.state_dict().items()}
    module = GANModule(generator, ProjectionCritic(3, (3, 8, 8), width=4), lr=0.01, class_weight=0.0,
                       diversity_weight=0.0, teacher=teacher, teacher_weight=20.0)
    z, y = torch.randn(300, 8), torch.arange(3).repeat(100)

    def teacher_loss() -> float:
        with torch.no_grad():
            return float(torch.nn.functional.cross_entropy(teacher(generator.eval()(z, y)), y))

    before = teacher_loss()
    generator.train()
    data = torch.utils.data.TensorDataset(torch.rand(64, 3, 8, 8), torch.arange(3).repeat(22)[:64])
    pl.Trainer(max_steps=60, logger=False, enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False, accelerator="cpu").fit(
        module, torch.utils.data.DataLoader(data, batch_size=16, shuffle=True))
    assert teacher_loss() < 0.5 * before
    assert not teacher.training and all(torch.equal(frozen[k], v) for k, v in teacher.state_dict().items())
    assert not any(key.startswith("_teacher") or "teacher" in key for key in module.state_dict())


def test_the_gate_classifier_cannot_also_be_the_teacher(tiny_shapes_target: Path, tmp_path: Path) -> None:
    from advaudit.tasks import train

    with pytest.raises(AdvauditError, match="the gate must be judged by a classifier the generator was not taught by"):
        train(compose_config("train", [*TINY_GENERATOR, f"model.quality_target={tiny_shapes_target}",
                                       f"model.class_teacher={tiny_shapes_target}"], tmp_path))


# the rendered objective: 3 batches of 20 fresh scenes per epoch at 16 px, a generator with a 1-layer trunk
TINY_RENDERED = ["experiment=faults/train_shapes_rendered_generator", "dataset.image_size=16",
                 "dataset.instances_per_class={train:1,val:2,test:3}", "dataset.m_eval=2", "dataset.batch_size=20",
                 "model.width=8", "model.latent_dim=24", "model.trunk_layers=1", "model.trunk_width=32",
                 "model.steps_per_epoch=3", "trainer.max_epochs=2", "logger=none", "callbacks=none", "threads=1",
                 "+trainer.enable_progress_bar=false", "+trainer.enable_model_summary=false"]


def test_rendered_scenes_are_fresh_balanced_reproducible_and_what_the_latent_names() -> None:
    from advaudit.models.generators.rendered_generator import RenderedScenes, scene_units
    from advaudit.worlds.shapes.world import ShapeWorld

    world = ShapeWorld(image_size=16, instances_per_class={"train": 1, "val": 1, "test": 1}, seed=0)
    scenes = RenderedScenes(world, world.factors, latent_dim=30, batch_size=20, steps=4, seed=7)
    z, y, x, mask = scenes[1]
    assert z.shape == (20, 30) and x.shape == (20, 3, 16, 16) and mask.shape == (20, 16, 16)
    assert torch.bincount(y, minlength=10).tolist() == [2] * 10  # every class, equally often
    assert torch.equal(scenes[1][2], x) and not torch.equal(scenes[2][2], x)  # same index, same scenes
    assert torch.equal(RenderedScenes(world, world.factors, 30, 20, 4, seed=7)[1][0], z)  # and in a rerun
    scenes.epoch = 1
    assert not torch.equal(scenes[1][0], z)  # a new epoch draws new scenes
    # the images are the world's renders of the scenes the first 23 latent coordinates name
    named, s = world.scenes_from_units(scene_units(z, world.scene_units), y)
    assert torch.allclose(x, world.render(named, s), atol=1 / 255)
    assert float(mask.float().mean()) > 0.01
    with pytest.raises(AdvauditError, match="set model.latent_dim>=23"):
        RenderedScenes(world, world.factors, latent_dim=16, batch_size=20, steps=4, seed=7)


def test_the_rendered_objective_fits_the_renders() -> None:
    """Fitted to fresh scenes, the generator's L1 to the renders of held-out scenes falls to under 70% in 40 steps."""
    from advaudit.models.generators.generator import ConditionalGenerator
    from advaudit.models.generators.rendered_generator import RenderedGeneratorModule, RenderedScenes
    from advaudit.worlds.shapes.world import ShapeWorld

    torch.manual_seed(0)
    # the box this known answer was measured in (Table 1, camera distance [1.5, 4] m), whatever the default
    world = ShapeWorld(image_size=8, instances_per_class={"train": 1, "val": 1, "test": 1}, seed=0, factors=BOX)
    scenes = RenderedScenes(world, world.factors, latent_dim=24, batch_size=40, steps=41, seed=0)
    module = RenderedGeneratorModule(ConditionalGenerator(10, (3, 8, 8), 24, 8, 1, 64), lr=3e-3)
    optimiser = module.configure_optimizers()

    def held_out_l1() -> float:
        module.generator.eval()
        with torch.no_grad():
            return float(module.render_loss(*scenes[40])[1])

    before = held_out_l1()
    module.generator.train()
    for step in range(40):
        optimiser.zero_grad()
        module.render_loss(*scenes[step])[0].backward()
        optimiser.step()
    assert held_out_l1() < 0.7 * before


def test_rendered_generator_trains_through_hydra_round_trips_and_feeds_the_fault_audit(tiny_shapes_target: Path,
                                                                                        tmp_path: Path) -> None:
    from advaudit.tasks import examine, train

    gate_classifier = load_target(tiny_shapes_target)
    overrides = [*TINY_RENDERED, f"model.quality_target={tiny_shapes_target}"]
    with pytest.raises(AdvauditError, match="failed its quality gate"):
        train(compose_config("train", [*overrides, "model.quality_gate=1.0"], tmp_path))
    refused = tmp_path / "run" / "checkpoints" / "generator_below_gate.pt"
    torch.load(refused, weights_only=True)
    generator, meta = load_generator(refused)
    assert meta["objective"] == "rendered" and meta["trunk_layers"] == 1 and len(generator.blocks[0]) == 6
    assert class_agreement(generator, gate_classifier) == pytest.approx(meta["quality"]["class_agreement"], abs=1e-9)
    # a rerun without a gate resumes (both epochs done) and saves the same generator as generator.pt
    result = train(compose_config("train", [*overrides, "model.quality_gate=null"], tmp_path))
    assert result["resumed_from_epoch"] == 2 and Path(result["checkpoint"]).name == "generator.pt"
    audit = ["audit.n_seeds=2", "audit.max_steps=8", "audit.eps=20", "audit.lr=0.1", "audit.pixel.l2.steps=2",
             "audit.pixel.linf.steps=2", f"audit.judge={tiny_shapes_target}", "logger=none"]
    # a target that tells table from chair by brightness accepts seeds of both from any generator
    names = gate_classifier.class_names
    audited = brightness_target(gate_classifier.meta, load_generator(result["checkpoint"])[0], names.index("table"),
                                names.index("chair"), tmp_path / "brightness_target.pt")
    summary = examine(compose_config("examine", ["experiment=faults/shapes", f"target={audited}",
                                                 f"generator={result['checkpoint']}", *audit], tmp_path / "audit"))
    assert summary["faults/both_directions"] is True and summary["faults/generator/success"] > 0
    assert torch.load(tmp_path / "audit" / "run" / "tests.pt", weights_only=True)["generator_tests"].shape == (4, 3, 16, 16)


@pytest.mark.parametrize("overrides, message", [
    (["model=generator", "dataset=digits", "model.objective=rendered", "logger=none", "callbacks=none"],
     "needs a rendered dataset"),
    ([*TINY_RENDERED, "model.quality_gate=null", "model.class_teacher=/nonexistent.pt"], "drop model.class_teacher"),
    ([*TINY_RENDERED, "model.quality_gate=null", "model.objective=diffusion"], "model.objective='diffusion'"),
])
def test_the_rendered_objective_refuses_what_it_cannot_use(overrides: list[str], message: str, tmp_path: Path) -> None:
    from advaudit.tasks import train

    with pytest.raises(AdvauditError, match=message):
        train(compose_config("train", overrides, tmp_path))
