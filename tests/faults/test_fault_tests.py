"""Generative fault tests: the generator, the feature-space walk, the pixel baseline and the audit."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
import torch
from torch import nn

from advaudit.errors import AdvauditError
from advaudit.faults.features import feature_shift
from advaudit.faults.foolbox_pgd import foolbox_pixel_tests
from advaudit.faults.search import FaultResult, generator_tests, margin_loss, pixel_distances, pixel_tests
from advaudit.faults.seeds import sample_seeds
from advaudit.models import load_target, save_target
from advaudit.models.generators.generator import ConditionalGenerator, GANModule, ProjectionCritic, load_generator, save_generator
from advaudit.models.nets import build_net
from advaudit.models.targets.target import TorchTarget
from tests.conftest import FMNIST_ROOT, compose_config


def tiny_generator(seed: int = 0, classes: int = 3) -> ConditionalGenerator:
    torch.manual_seed(seed)
    return ConditionalGenerator(classes, (1, 12, 12), latent_dim=8, width=4).eval()


def linear_model(seed: int = 1, classes: int = 3) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(144, classes))


def test_zero_perturbation_reproduces_the_seed_and_shapes_follow_the_blocks() -> None:
    generator = tiny_generator()
    z, y = torch.randn(5, 8), torch.tensor([0, 1, 2, 0, 1])
    x = generator(z, y)
    assert x.shape == (5, 1, 12, 12) and float(x.min()) >= 0 and float(x.max()) <= 1
    acts = generator.activations(z, y, 2)
    assert [tuple(a.shape) for a in acts] == [(5, 16, 3, 3), (5, 8, 6, 6)]
    assert torch.equal(generator(z, y, [torch.zeros_like(a) for a in acts]), x)
    assert not torch.allclose(generator(z, y, [torch.ones_like(acts[0])]), x)


def test_generator_walk_reaches_confident_targeted_mistakes_within_the_budget() -> None:
    generator, model = tiny_generator(), linear_model()
    with torch.no_grad():
        model[1].weight.mul_(5)
    z = torch.randn(16, 8, generator=torch.Generator().manual_seed(0))
    y0 = torch.zeros(16, dtype=torch.long)
    y1 = model(generator(z, y0)).topk(2, 1).indices[:, 1]   # each seed's runner-up class
    for anneal in (False, True):
        result = generator_tests(generator, model, z, y0, y1, k=2, eps=50.0, kappa=0.2, lr=0.1, max_steps=80,
                                 anneal=anneal)
        ok = result.success
        assert bool((margin_loss(model(result.tests[ok]), y0[ok], y1[ok], 0.2) < 1e-5).all())
        assert bool((result.final_label[ok] == y1[ok]).all())
        cap = torch.clamp(1 + 0.1 * result.steps.float(), max=50.0) if anneal else torch.full((16,), 50.0)
        assert bool((result.perturbation_norm <= cap + 1e-3).all())
        if not anneal:
            assert float(ok.float().mean()) >= 0.75
    tight = generator_tests(generator, model, z, y0, y1, k=1, eps=1e-3, kappa=0.2, max_steps=20)
    assert bool((tight.perturbation_norm <= 1e-3 + 1e-6).all()) and float(tight.success.float().mean()) < 0.5
    with pytest.raises(AdvauditError, match="eps=0.0 must be > 0"):
        generator_tests(generator, model, z, y0, y1, k=2, eps=0.0)


def two_direction_walk() -> tuple[ConditionalGenerator, nn.Module, torch.Tensor, torch.Tensor, dict]:
    """A 2-class generator and a steep linear model, 6 seeds of each class, walk settings under which
    some seeds fail early and some never."""
    generator, model = tiny_generator(classes=2), linear_model(classes=2)
    with torch.no_grad():
        model[1].weight.mul_(5)
    z = torch.randn(12, 8, generator=torch.Generator().manual_seed(3))
    y0 = torch.tensor([0] * 6 + [1] * 6)
    return generator, model, z, y0, dict(k=2, eps=20.0, kappa=0.2, lr=0.05, max_steps=60)


def test_seeds_walk_independently_so_both_directions_share_one_batch() -> None:
    """One walk over pullover->coat and coat->pullover seeds gives each seed the test it gets alone,
    however often the batch drops finished seeds (the CPU / accelerator synchronisation interval)."""
    generator, model, z, y0, settings = two_direction_walk()
    both = generator_tests(generator, model, z, y0, 1 - y0, **settings)
    alone = [generator_tests(generator, model, z[s], y0[s], 1 - y0[s], **settings) for s in (slice(0, 6), slice(6, 12))]
    assert 0 < int(both.success.sum()) < 12  # some seeds fail early, some never: the batch shrinks as it goes
    for name in ("success", "steps", "final_label"):
        assert torch.equal(getattr(both, name), torch.cat([getattr(a, name) for a in alone]))
    assert torch.allclose(both.tests, torch.cat([a.tests for a in alone]), atol=1e-5)
    assert torch.allclose(both.perturbation_norm, torch.cat([a.perturbation_norm for a in alone]), atol=1e-4)
    sparse = generator_tests(generator, model, z, y0, 1 - y0, compact_every=7, **settings)
    assert torch.equal(sparse.success, both.success) and torch.equal(sparse.steps, both.steps)
    assert torch.allclose(sparse.tests, both.tests, atol=1e-5)
    assert all(p.requires_grad for p in model.parameters())  # frozen only during the walk


def test_walk_refuses_seeds_on_another_device_than_the_models() -> None:
    generator, model = tiny_generator(), linear_model()
    z, y0 = torch.randn(2, 8, device="meta"), torch.zeros(2, dtype=torch.long, device="meta")
    with pytest.raises(AdvauditError, match="the generator is on cpu but the seeds are on meta"):
        generator_tests(generator, model, z, y0, None, k=2, eps=1.0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_walk_and_pixel_baseline_run_on_cuda_like_on_the_cpu() -> None:
    generator, model, z, y0, settings = two_direction_walk()
    on_cpu = generator_tests(generator, model, z, y0, 1 - y0, **settings)
    on_gpu = generator_tests(generator.cuda(), model.cuda(), z.cuda(), y0.cuda(), 1 - y0.cuda(), **settings)
    assert on_gpu.tests.device.type == "cuda" and on_gpu.success.device.type == "cuda"
    assert float((on_gpu.success.cpu() == on_cpu.success).float().mean()) >= 0.9
    x = torch.rand(6, 1, 12, 12, device="cuda")
    pixel = pixel_tests(model, x, model(x).argmax(1), None, eps=3.0, steps=10)
    assert pixel.tests.device.type == "cuda" and pixel.success.device.type == "cuda"


@pytest.mark.parametrize("engine", [pixel_tests, foolbox_pixel_tests], ids=["advaudit", "foolbox"])
def test_pixel_baseline_respects_its_ball_and_the_margin(engine: Callable[..., FaultResult]) -> None:
    model = linear_model()
    x = torch.rand(12, 1, 12, 12, generator=torch.Generator().manual_seed(2))
    y0 = model(x).argmax(1)
    y1 = (y0 + 1) % 3
    for norm, eps in (("l2", 3.0), ("linf", 0.3)):
        result = engine(model, x, y0, y1, eps=eps, norm=norm, kappa=0.5, steps=60)
        d = pixel_distances(x, result.tests)[norm]
        assert bool((d <= eps + 1e-4).all()) and float(result.success.float().mean()) > 0.5
        assert float(result.tests.min()) >= 0 and float(result.tests.max()) <= 1
        ok = result.success
        assert bool((margin_loss(model(result.tests[ok]), y0[ok], y1[ok], 0.5) < 1e-5).all())
        assert bool((margin_loss(model(result.tests[~ok]), y0[~ok], y1[~ok], 0.5) >= 0).all())
    untargeted = engine(model, x, y0, None, eps=3.0, norm="l2", steps=60)
    assert float(untargeted.success.float().mean()) > 0.5
    assert bool((untargeted.final_label[untargeted.success] != y0[untargeted.success]).all())


def test_generator_checkpoint_round_trip_and_seed_rejection(tmp_path: Path) -> None:
    generator = tiny_generator()
    meta = {"class_names": ["a", "b", "c"], "image_shape": [1, 12, 12], "latent_dim": 8, "width": 4}
    path = save_generator(generator, meta, tmp_path / "generator.pt")
    loaded, loaded_meta = load_generator(path)
    z, y = torch.randn(3, 8), torch.tensor([0, 1, 2])
    assert torch.allclose(loaded(z, y), generator(z, y)) and loaded_meta["class_names"] == ["a", "b", "c"]
    never = nn.Sequential(nn.Flatten(), nn.Linear(144, 3))
    with torch.no_grad():
        never[1].weight.zero_()
        never[1].bias.copy_(torch.tensor([0.0, 0.0, 5.0]))  # always class 2
    with pytest.raises(AdvauditError, match=r"only 0 of 40 generated class-0 seeds"):
        sample_seeds(generator, never, 0, 4, max_rounds=10)
    z, y, images = sample_seeds(generator, never, 2, 4)
    assert images.shape == (4, 1, 12, 12) and bool((y == 2).all())


def test_one_gan_step_moves_both_networks() -> None:
    generator, critic = tiny_generator(), ProjectionCritic(3, (1, 12, 12), width=4)
    import pytorch_lightning as pl

    before = [p.clone() for p in generator.parameters()], [p.clone() for p in critic.parameters()]
    data = torch.utils.data.TensorDataset(torch.rand(16, 1, 12, 12), torch.randint(3, (16,)))
    trainer = pl.Trainer(max_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu")
    trainer.fit(GANModule(generator.train(), critic), torch.utils.data.DataLoader(data, batch_size=8))
    assert any(not torch.equal(a, b) for a, b in zip(before[0], generator.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(before[1], critic.parameters()))


def brightness_target(meta: dict, generator: ConditionalGenerator, bright: int, dark: int, path: Path) -> Path:
    """A linear target (of ``meta``'s classes and input shape) that calls an image class ``bright`` above
    the median brightness of the generator's images of these two classes and ``dark`` below it (every other
    class far behind): about half the seeds of either class are accepted, whatever the other classes look like."""
    classes = generator.num_classes
    with torch.no_grad():
        samples = generator(generator.sample_latent(400), torch.tensor([bright, dark]).repeat(200))
    median = float(samples.flatten(1).mean(1).median())
    channels, pixels = samples.shape[1], samples[0].numel()
    meta = {**meta, "arch": "mlp", "arch_params": {"hidden": [], "dropout": 0.0},
            "normalization": {"mean": [0.0] * channels, "std": [1.0] * channels}}
    target = TorchTarget(build_net("advaudit.models.nets.MLP", meta["input_shape"], classes, hidden=[], dropout=0.0), meta)
    linear = target.net.body[1]
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.fill_(-100.0)
        for cls, sign in ((bright, 1.0), (dark, -1.0)):
            linear.weight[cls] = sign * 50.0 / pixels
            linear.bias[cls] = -sign * 50.0 * median
    return save_target(target, path)


def untrained_generator_for(target_path: Path, tmp_path: Path) -> tuple[TorchTarget, ConditionalGenerator, dict, Path]:
    """The target at ``target_path``, an untrained 28-px generator of its classes, its meta and its saved path."""
    target = load_target(target_path)
    torch.manual_seed(0)
    generator = ConditionalGenerator(10, (1, 28, 28), latent_dim=16, width=8).eval()
    meta = {"class_names": target.class_names, "image_shape": [1, 28, 28], "latent_dim": 16, "width": 8}
    return target, generator, meta, save_generator(generator, meta, tmp_path / "generator.pt")


def test_fault_test_audit_end_to_end_and_bad_input(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    from advaudit.tasks import examine

    target, generator, meta, path = untrained_generator_for(tiny_fmnist_target, tmp_path)
    with torch.no_grad():  # the class this target most often sees in the untrained generator's images
        labels = target.logits(generator(torch.randn(200, 16), torch.randint(10, (200,)))).argmax(1)
    source = int(labels.bincount(minlength=10).argmax())
    other = (source + 1) % 10
    base = [f"target={tiny_fmnist_target}", f"generator={path}", "audit=fault_tests", "logger=none",
            "audit.n_seeds=6", "audit.max_steps=30", "audit.pixel.l2.steps=10", "audit.pixel.linf.steps=10",
            f"audit.transfer_targets=[{tiny_fmnist_target}]"]
    cfg = compose_config("examine", [*base, f"audit.source_class={source}", f"audit.target_class={other}",
                                     "audit.eps=50", f"audit.judge={tiny_fmnist_target}",
                                     "audit.fault_feature=[{kind:brightness,direction:-1},{kind:size,direction:1}]"],
                         tmp_path)
    result = examine(cfg)
    out = Path(cfg.paths.output_dir)
    for kind in ("generator", "pixel_l2", "pixel_linf"):
        assert 0.0 <= result[f"faults/{kind}/success"] <= 1.0
        if result[f"faults/{kind}/success"] > 0:  # the judge is the target itself here: no failing test keeps its class
            assert result[f"faults/{kind}/valid_share"] == 0.0
            for feature in ("brightness", "size"):
                key = f"faults/{kind}/feature/{feature}/moved_share"
                assert result[f"{key}/lo"] <= result[key] <= result[f"{key}/hi"]
            assert result[f"faults/{kind}/feature/brightness_valid/moved_share"] is None
            assert f"faults/{kind}/transfer_acc/checkpoints" not in result  # RQ3 counts valid tests only
    assert (out / "distances.png").is_file() and (out / "fault_tests.json").is_file()
    saved = torch.load(out / "tests.pt", weights_only=True)
    assert saved["generator_tests"].shape == (6, 1, 28, 28)
    d = pixel_distances(saved["seeds"], saved["pixel_linf_tests"])["linf"]
    assert bool((d <= 0.1 + 1e-4).all())
    assert "| generator |" in (out / "report.md").read_text()
    assert "/lo" not in (out / "report.md").read_text()  # interval keys are no transfer targets
    # the transfer target's accuracy on the unperturbed seeds, scored here from the saved seeds
    seeds_right = target.predict_proba(saved["seeds"]).argmax(1) == saved["y0"]
    name = tiny_fmnist_target.parent.parent.name
    assert result[f"faults/seeds/transfer_acc/{name}"] == pytest.approx(float(seeds_right.float().mean()))
    # a rerun of the same audit reuses the finished chunks: same tests, no search time spent again
    again = examine(cfg)
    assert torch.equal(torch.load(out / "tests.pt", weights_only=True)["generator_tests"], saved["generator_tests"])
    assert again["faults/generator/success"] == result["faults/generator/success"]
    assert again["faults/generator/seconds_per_test"] == result["faults/generator/seconds_per_test"]  # loaded
    assert "faults/seeds/transfer_acc/checkpoints" not in again and any("faults/seeds/transfer_acc/" in k for k in again)
    # the run dir is claimed for this audit's fingerprint: changing a setting that changes the tests (here
    # only the pixel baseline) is refused by the audit itself, in one line, instead of mixing tests
    from advaudit.audits.fault_tests import run as run_fault_tests
    from advaudit.validation import plain_config

    with pytest.raises(AdvauditError, match="holds a different examination"):
        run_fault_tests(plain_config(compose_config("examine", [
            *base, f"audit.source_class={source}", f"audit.target_class={other}", "audit.eps=50",
            "audit.pixel_engine=advaudit"], tmp_path)))
    assert sorted(p.parent.name for p in (out / "units").glob("*/*.pt")) == ["generator", "pixel_l2", "pixel_linf"]
    # both directions in one walk: the reverse tests start from target-class seeds, and each injected
    # feature's direction flips for them
    both_target = brightness_target(target.meta, generator, source, other, tmp_path / "brightness_target.pt")
    transfer = f"audit.transfer_targets=[{both_target},{tiny_fmnist_target}]"
    both = examine(compose_config("examine", [*base, f"target={both_target}", transfer,
                                              f"audit.source_class={source}", f"audit.target_class={other}",
                                              "audit.eps=50", "audit.lr=0.2", "audit.both_directions=true", "audit.pixel={}",
                                              "audit.fault_feature={kind:brightness,direction:-1}"], tmp_path / "both"))
    saved_both = torch.load(tmp_path / "both" / "run" / "tests.pt", weights_only=True)
    assert saved_both["y0"].tolist() == [source] * 6 + [other] * 6
    for prefix, rows, sign in (("", slice(0, 6), -1.0), ("reverse/", slice(6, 12), 1.0)):
        ok = saved_both["generator_success"][rows]
        assert both[f"faults/{prefix}generator/success"] == float(ok.float().mean()) > 0
        if ok.any():
            shift = feature_shift(saved_both["seeds"][rows], saved_both["generator_tests"][rows], "brightness", sign)
            assert both[f"faults/{prefix}generator/feature/brightness/moved_share"] == float((shift[ok] > 0).float().mean())
        # transfer accuracies on the failing tests (no judge: all count): the target itself gets none of them
        # right; the other checkpoint's share is scored here from the saved tests
        tests, y0 = saved_both["generator_tests"][rows][ok], saved_both["y0"][rows][ok]
        assert both[f"faults/{prefix}generator/transfer_acc/{both_target.parent.parent.name}"] == 0.0
        other_right = target.predict_proba(tests).argmax(1) == y0
        assert both[f"faults/{prefix}generator/transfer_acc/{name}"] == pytest.approx(float(other_right.float().mean()))
    assert "| reverse/generator |" in (tmp_path / "both" / "run" / "report.md").read_text()
    with pytest.raises(AdvauditError, match="are both"):
        examine(compose_config("examine", [*base, f"audit.source_class={source}", f"audit.target_class={source}"],
                               tmp_path / "same_class"))
    with pytest.raises(AdvauditError, match="must be > 0"):
        examine(compose_config("examine", [*base, f"audit.source_class={source}", "audit.eps=0"], tmp_path / "eps"))
    wrong = save_generator(ConditionalGenerator(3, (1, 28, 28), 16, 8), {**meta, "class_names": ["a", "b", "c"]},
                           tmp_path / "wrong.pt")
    with pytest.raises(AdvauditError, match="the target's class 't-shirt' is not a class of the generator's classes"):
        examine(compose_config("examine", [*base, f"generator={wrong}"], tmp_path / "wrong"))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.skipif(not FMNIST_ROOT.exists(), reason="Fashion-MNIST not installed")
def test_fault_test_audit_runs_on_cuda_with_both_directions(tiny_fmnist_target: Path, tmp_path: Path) -> None:
    from advaudit.tasks import examine

    target, generator, meta, path = untrained_generator_for(tiny_fmnist_target, tmp_path)
    both_target = brightness_target(target.meta, generator, 0, 1, tmp_path / "brightness_target.pt")
    result = examine(compose_config("examine", [
        f"target={both_target}", f"generator={path}", "audit=fault_tests", "logger=none", "device=cuda",
        "audit.source_class=0", "audit.target_class=1", "audit.both_directions=true", "audit.n_seeds=6",
        "audit.max_steps=30", "audit.eps=50", "audit.lr=0.2", "audit.pixel_engine=advaudit",
        "audit.pixel.l2.steps=10", "audit.pixel.linf.steps=10", f"audit.judge={tiny_fmnist_target}",
        f"audit.transfer_targets=[{tiny_fmnist_target}]", "audit.fault_feature={kind:brightness,direction:-1}"],
        tmp_path))
    assert result["faults/generator/success"] > 0 and result["faults/reverse/generator/success"] > 0
    assert torch.load(tmp_path / "run" / "tests.pt", weights_only=True)["generator_tests"].device.type == "cpu"


def test_injected_feature_direction_is_measured_on_images() -> None:
    from advaudit.data.bias import add_image_feature
    from advaudit.faults.features import feature_value

    seeds = torch.full((4, 1, 10, 10), 0.2)
    patched = add_image_feature(seeds, "patch", 1.0)
    assert torch.allclose(feature_value(patched, "patch"), torch.ones(4))
    assert torch.allclose(feature_value(seeds, "brightness"), torch.full((4,), 0.2))
    tests = torch.cat([patched[:3], seeds[3:] * 0.5])
    assert (feature_shift(seeds, tests, "patch", 1.0) > 0).tolist() == [True, True, True, False]
    assert (feature_shift(seeds, tests, "brightness", -1.0) > 0).tolist() == [False, False, False, True]
    assert torch.allclose(feature_shift(seeds, tests, "patch", 1.0), torch.tensor([0.8, 0.8, 0.8, -0.1]))
    with pytest.raises(AdvauditError, match="brightness, size or patch"):
        feature_value(seeds, "texture")
    grown = seeds.clone()
    grown[..., :5, :] = 0.0                      # half the object gone: size 1.0 -> 0.5
    assert torch.allclose(feature_value(grown, "size"), torch.full((4,), 0.5))
    assert (feature_shift(seeds, grown, "size", -1.0) > 0).all()


def test_two_drops_tie_a_feature_to_each_class_and_the_held_out_sets_split_by_it() -> None:
    from advaudit.data.bias import apply_bias
    from advaudit.data.split import Split

    brightness = torch.linspace(0.05, 0.95, 20)
    x = brightness[:, None, None, None].expand(20, 1, 4, 4).clone()
    y = torch.arange(20) % 2
    drops = {"drop_subgroup": [{"class": "a", "attribute": "brightness", "low": 0.0, "high": 0.5},
                               {"class": "b", "attribute": "brightness", "low": 0.5, "high": 1.0}]}
    kept = apply_bias(Split(x, y, {}), drops, ["a", "b"], seed=0)
    mean = kept.x.flatten(1).mean(1)
    assert bool((mean[kept.y == 0] > 0.5).all()) and bool((mean[kept.y == 1] < 0.5).all())
    assert len(kept) == 10


def test_distance_histograms_survive_tests_that_all_sit_on_the_ball(tmp_path: Path) -> None:
    from advaudit.audits.fault_tests import _plots

    seeds = torch.zeros(5, 1, 8, 8)
    tests = seeds + 0.1  # Linf PGD that always ends on its ball's surface: one distinct distance
    result = FaultResult(tests, torch.ones(5, dtype=torch.bool), torch.ones(5, dtype=torch.long),
                         torch.zeros(5, dtype=torch.long), 0.0, torch.ones(5))
    plots = _plots(tmp_path, {"pixel_linf": (seeds, result)}, {"pixel_linf": pixel_distances(seeds, tests)},
                   {"pixel_linf": ["seed", "test"] * 5})
    assert plots["faults/distances"].is_file() and (tmp_path / "pixel_linf_pairs.png").is_file()
