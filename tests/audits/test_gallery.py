"""The factor gallery audit: a PNG per instance, one row per factor."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from advaudit.audits.gallery import sweep_conditions
from advaudit.errors import AdvauditError
from advaudit.tasks import examine


def test_sweep_moves_one_factor_per_row() -> None:
    u = sweep_conditions(4, 5, 0.5, {2: 0.9})
    assert u.shape == (4, 5, 4)
    assert torch.equal(u[1, :, 1], torch.linspace(0, 1, 5)) and bool((u[1, :, 0] == 0.5).all())
    assert bool((u[0, :, 2] == 0.9).all()) and torch.equal(u[2, :, 2], torch.linspace(0, 1, 5))


def test_gallery_for_both_worlds(make_cfg, tmp_path: Path) -> None:
    for world in ("shapes", "transforms"):  # one run dir each: a run dir belongs to one config
        cfg = make_cfg("examine", [f"paths.output_dir={tmp_path / world}", *(
                       ["audit=gallery", f"world={world}", "audit.n_instances=2", "audit.steps=3",
                        "logger=none", "world.image_size=16"] if world == "shapes" else
                       ["audit=gallery", "world=transforms", "audit.n_instances=2", "audit.steps=3", "logger=none",
                        "+world.dataset.limit={train:10,val:10,test:10}"])])
        result = examine(cfg)
        assert len(result["galleries"]) == 2 and all(Path(p).stat().st_size > 2000 for p in result["galleries"])
    with pytest.raises(AdvauditError, match="audit.steps=1"):
        examine(make_cfg("examine", ["audit=gallery", "world=shapes", "audit.steps=1", "logger=none"]))
