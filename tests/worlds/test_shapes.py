"""ShapeWorld: determinism, every factor matters, objects stay visible, and it is learnable."""

from __future__ import annotations

import torch

from advaudit.worlds.protocol import unit_to_factor
from advaudit.worlds.shapes import DEFAULT_FACTORS, ShapeWorld

WORLD = ShapeWorld(image_size=32, instances_per_class={"train": 3, "val": 3, "test": 3})


def test_instances_are_deterministic_and_splits_disjoint() -> None:
    a, b = WORLD.instances("test"), ShapeWorld(image_size=32, instances_per_class={"test": 3}).instances("test")
    assert torch.equal(a.data["proportions"], b.data["proportions"]) and len(a) == 30
    train = WORLD.instances("train")
    assert not set(train.ids.tolist()) & set(a.ids.tolist())
    assert not torch.equal(train.data["proportions"], a.data["proportions"])


def test_render_is_deterministic_and_in_range() -> None:
    z = WORLD.instances("test")
    s = unit_to_factor(torch.rand(len(z), 2, 12, generator=torch.Generator().manual_seed(0)), WORLD.factors)
    x1, x2 = WORLD.render(z, s), WORLD.render(z, s)
    assert x1.shape == (60, 3, 32, 32) and torch.equal(x1, x2)
    assert 0 <= float(x1.min()) and float(x1.max()) <= 1
    assert torch.equal(WORLD.render(z.subset(torch.tensor([3])), s[3:4])[1], x1[7])  # row n*q+j


def test_every_factor_visibly_changes_the_image() -> None:
    z = WORLD.instances("test").subset(torch.arange(0, 30, 3))  # one instance per class
    base = torch.full((len(z), 1, 12), 0.5)
    base[:, :, :3] = 0.3  # a tilted sun (a straight-down sun is symmetric under one of its rotations)
    base[:, :, 3] = 0.8  # and a bright one, so its angles show
    for i, factor in enumerate(DEFAULT_FACTORS):
        moved = base.clone()
        moved[:, :, i] = 0.1 if float(base[0, 0, i]) > 0.5 else 0.9
        diff = (WORLD.render(z, unit_to_factor(base, DEFAULT_FACTORS))
                - WORLD.render(z, unit_to_factor(moved, DEFAULT_FACTORS))).abs()
        # visibly: some pixels move by more than 12 of 255 levels
        assert float(diff.amax()) > 0.05, f"{factor.name} does not visibly change the image"


def test_objects_are_visible_over_the_default_range() -> None:
    z = WORLD.instances("val")
    generator = torch.Generator().manual_seed(1)
    extremes = torch.randint(0, 2, (len(z), 8, 12), generator=generator).float()  # corners of S
    for u in (torch.rand(len(z), 8, 12, generator=generator), extremes):
        masks = WORLD.render_masks(z, unit_to_factor(u, DEFAULT_FACTORS))
        assert bool((masks.flatten(1).sum(1) >= 2).all())


def test_shadows_darken_some_pixels() -> None:
    z = WORLD.instances("test").subset(torch.tensor([18]))  # a table: its top shades its legs
    # sun tilted 30 degrees from straight above, bright; camera slightly above the table
    s = torch.tensor([[[30.0, 0.0, 0.0, 5.0, 1.0, 8.0, 0.0, 80.0, 3.0, 30.0, 20.0, 0.0]]])
    lit = ShapeWorld(image_size=32, instances_per_class={"test": 3}, shadows=False).render(z, s)
    shaded = WORLD.render(z, s)
    assert bool((shaded <= lit + 1e-6).all()) and float((lit - shaded).sum()) > 0


def test_a_model_trained_on_the_world_beats_chance_on_held_out_instances(make_cfg) -> None:
    """A small CNN, 16 px, a moderate slice of S (closer cameras, little roll): well above 10%."""
    from advaudit.tasks import train

    moderate = "{camera_distance:[2,3.5],camera_roll:[0,20],camera_elevation:[-10,50]}"
    cfg = make_cfg("train", ["dataset=shapes", "model=cnn", "dataset.image_size=16", "dataset.m=6", "dataset.m_eval=4",
                             "dataset.instances_per_class={train:20,val:5,test:5}", f"dataset.factors={moderate}",
                             f"dataset.eval_factors={moderate}", "trainer.max_epochs=5", "logger=none",
                             "callbacks=none", "+trainer.enable_progress_bar=false"])
    result = train(cfg)
    assert result["test/acc"] > 0.35  # chance is 0.10; test instances are disjoint from training ones
