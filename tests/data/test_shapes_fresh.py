"""dataset=shapes with fresh=true: new seeded random conditions every epoch, val/test fixed."""

from __future__ import annotations

import pytest
import torch
from lightning_fabric.utilities.data import _set_sampler_epoch

from advaudit.data.shapes import ShapesDataModule
from advaudit.errors import AdvauditError
from advaudit.worlds.protocol import Factor, wrap_periodic

SMALL = dict(m=2, m_eval=1, image_size=16, instances_per_class={"train": 2, "val": 1, "test": 1},
             classes=["mug", "chair"], shadows=False, batch_size=4)


def _module(**kw) -> ShapesDataModule:
    return ShapesDataModule(**{**SMALL, **kw})


def test_epochs_see_different_conditions_and_a_seed_repeats_its_epochs() -> None:
    a, b = _module(fresh=True, seed=3), _module(fresh=True, seed=3)
    first, second = a.render_epoch(0), a.render_epoch(1)
    # same instances and labels every epoch, different conditions (every factor of every render moves)
    assert torch.equal(first.attributes["instance"], second.attributes["instance"])
    assert torch.equal(first.y, second.y)
    assert bool((first.attributes["camera_azimuth"] != second.attributes["camera_azimuth"]).all())
    assert not torch.allclose(first.x, second.x)
    # the same seed gives the same epoch, bit for bit; another seed does not
    again = b.render_epoch(1)
    assert torch.equal(again.x, second.x) and torch.equal(again.attributes["camera_roll"], second.attributes["camera_roll"])
    other = _module(fresh=True, seed=4).render_epoch(1)
    assert not torch.equal(other.attributes["camera_roll"], second.attributes["camera_roll"])


def test_train_loader_rerenders_when_lightning_sets_the_epoch_and_eval_splits_stay_fixed() -> None:
    dm = _module(fresh=True)
    loader = dm.train_dataloader()
    epoch0 = torch.cat([x for x, _ in loader])
    _set_sampler_epoch(loader, 0)
    assert torch.equal(torch.cat([x for x, _ in loader]).sort(0).values, epoch0.sort(0).values)
    _set_sampler_epoch(loader, 1)  # what Lightning's fit loop calls at the start of epoch 1
    epoch1 = torch.cat([x for x, _ in loader])
    assert epoch1.shape == epoch0.shape and not torch.allclose(epoch1.sort(0).values, epoch0.sort(0).values)
    expected = dm.render_epoch(1).x
    assert torch.equal(epoch1.sort(0).values, expected.sort(0).values)
    # validation and test are the renders of the fixed (fresh=false) data module
    fixed = _module(fresh=False)
    for split in ("val", "test"):
        assert torch.equal(dm.split(split).x, fixed.split(split).x)


def test_fresh_training_respects_the_training_factor_bounds() -> None:
    dm = _module(fresh=True, factors={"camera_elevation": [-30, 30]})
    for epoch in (0, 1, 2):
        elevation = dm.render_epoch(epoch).attributes["camera_elevation"]
        assert float(elevation.abs().max()) <= 30.0
    assert float(dm.split("val").attributes["camera_elevation"].abs().max()) > 30.0


def test_fresh_refuses_options_that_edit_one_fixed_training_split() -> None:
    with pytest.raises(AdvauditError, match="dataset.fresh=true .* dataset.factors"):
        _module(fresh=True, bias={"max_per_group": 1})


def test_a_training_arc_may_cross_the_seam_of_a_circle() -> None:
    # camera_roll trained on [180, 450]: the arc from 180 deg through 0 to 90 deg; (90, 180) is never seen
    split = _module(fresh=True, m=50, factors={"camera_roll": [180, 450]}).render_epoch(0)
    roll = split.attributes["camera_roll"]
    assert bool(((roll >= 0) & (roll < 360)).all())
    assert not bool(((roll > 90) & (roll < 180)).any())
    assert bool((roll < 90).any()) and bool((roll > 180).any())


def test_wrap_periodic_known_answers() -> None:
    factors = [Factor("roll", 0.0, 360.0, "deg", 360.0), Factor("elevation", -90.0, 90.0, "deg")]
    s = torch.tensor([[400.0, 100.0], [-30.0, -100.0], [359.0, 0.0]])
    assert torch.equal(wrap_periodic(s, factors), torch.tensor([[40.0, 100.0], [330.0, -100.0], [359.0, 0.0]]))
