"""A new built-in world and a new built-in error-search scorer are each one file plus one YAML.

As ``tests/config/test_new_part.py`` does for an examiner, each test copies advaudit's package and
``conf/`` to a temporary folder and adds only the part's module (the class and its settings
dataclass) and its YAML (which names the settings): ``advaudit/worlds/discs.py`` +
``conf/world/discs.yaml``, ``advaudit/search/outliers.py`` + ``conf/search/method/outliers.yaml``.
The registry finds each, ``world=discs`` / ``search=outliers`` compose and validate it, and a small
real audit runs it (the gallery for the world, an error search for the scorer).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advaudit.registry import method_options, settings_modules

REPO = Path(__file__).resolve().parents[2]

WORLD = '''\
"""DiscWorld: discs and squares on a grey background, under size, position and brightness."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Optional

import torch
from torch import Tensor

from advaudit.config import typed
from advaudit.config.ranges import ranged
from advaudit.config.rules import IMAGE_SIZE, PER_CLASS
from advaudit.runtime import resolve_device
from advaudit.worlds import Factor, Instances
from advaudit.worlds.protocol import configure_factors
from advaudit.worlds.settings import WorldPart

FACTORS = [Factor("size", 0.2, 0.45), Factor("shift_x", -0.25, 0.25), Factor("brightness", 0.3, 1.0)]


@dataclass
class DiscWorldConf(WorldPart):
    """``conf/world/discs.yaml``."""

    schema_name: ClassVar[Optional[str]] = "discs_schema"
    factors_from: ClassVar[Optional[str]] = "advaudit.worlds.discs:FACTORS"

    _target_: str = "advaudit.worlds.discs.DiscWorld"
    image_size: int = ranged(32, rule=IMAGE_SIZE)
    instances_per_class: Dict[str, int] = ranged(factory=lambda: {"train": 50, "val": 10, "test": 10}, rule=PER_CLASS)
    seed: int = 0
    factors: Any = None
    device: str = "cpu"


class DiscWorld:
    """Two classes (disc, square); an instance is a colour. ``render``: ``s`` ``[N, q, 3]`` -> ``[N*q, 3, H, W]``."""

    class_names = ["disc", "square"]

    def __init__(self, **settings: Any) -> None:
        conf = typed(DiscWorldConf, settings)
        self.image_size, self.seed = conf.image_size, conf.seed
        self.image_shape = (3, conf.image_size, conf.image_size)
        self.factors = configure_factors(FACTORS, conf.factors)
        self.instances_per_class = dict(conf.instances_per_class)
        self.device = resolve_device(conf.device)

    def instances(self, split: str) -> Instances:
        offset = {"train": 0, "val": 1, "test": 2}[split]
        generator = torch.Generator().manual_seed(self.seed * 3 + offset)
        n = 2 * self.instances_per_class[split]
        colour = torch.rand(n, 3, generator=generator) * 0.7 + 0.3
        return Instances({"colour": colour}, torch.arange(n) % 2, torch.arange(n) + 1000 * offset).to(self.device)

    def render(self, z: Instances, s: Tensor) -> Tensor:
        n, q, _ = s.shape
        size, shift, brightness = (s[..., i].reshape(n * q, 1, 1) for i in range(3))
        grid = torch.linspace(-0.5, 0.5, self.image_size, device=s.device)
        y, x = torch.meshgrid(grid, grid, indexing="ij")
        x = x - shift
        square = z.labels.repeat_interleave(q).view(n * q, 1, 1).bool()
        inside = torch.where(square, torch.maximum(x.abs(), y.abs()) <= size, x ** 2 + y ** 2 <= size ** 2)
        colour = z.data["colour"].repeat_interleave(q, 0).view(n * q, 3, 1, 1) * brightness[:, None]
        return torch.where(inside[:, None], colour, torch.full_like(colour, 0.5)).clamp(0, 1)
'''

WORLD_YAML = "# DiscWorld. Settings and defaults: DiscWorldConf in advaudit/worlds/discs.py.\n" \
             "defaults:\n  - discs_schema\n  - _self_\n"

SCORER = '''\
"""A static error-search scorer: query first the items farthest from the eligible items' mean."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Optional

from torch import Tensor

from advaudit.config import typed
from advaudit.config.part import Part
from advaudit.config.ranges import Ranged, ranged
from advaudit.search.scorers import ScoreInputs


@dataclass
class OutliersFirstConf(Part, Ranged):
    """``conf/search/method/outliers.yaml``."""

    config_group: ClassVar[str] = "search/method"
    config_path: ClassVar[str] = "search.outliers"
    schema_name: ClassVar[Optional[str]] = "outliers_schema"

    _target_: str = "advaudit.search.outliers.OutliersFirst"
    _partial_: bool = True
    power: float = ranged(2.0, low=0, low_open=True)


class OutliersFirst:
    """Each eligible item's L``power`` distance to the items' mean, features scaled to the data box."""

    def __init__(self, **settings: Any) -> None:
        self.power = typed(OutliersFirstConf, settings).power

    def item_values(self, inputs: ScoreInputs, cache: Path) -> tuple[Tensor, dict[str, Any]]:
        scaled = ((inputs.items - inputs.low) / (inputs.high - inputs.low).clamp_min(1e-12)).flatten(1)
        distance = (scaled - scaled.mean(0)).abs().pow(self.power).sum(1).double()
        return distance, {"mean_distance": float(distance.mean())}

    def pool_scores(self, values: Tensor, confidence: Tensor, pools: Tensor) -> Tensor:
        return -values[pools]
'''

SCORER_YAML = "# @package search.outliers\n# The farthest items first. Settings: OutliersFirstConf in advaudit/search/outliers.py.\n" \
              "defaults:\n  - outliers_schema\n  - _self_\n"

ADDED = {"world": {"advaudit/worlds/discs.py": WORLD, "conf/world/discs.yaml": WORLD_YAML},
         "scorer": {"advaudit/search/outliers.py": SCORER, "conf/search/method/outliers.yaml": SCORER_YAML}}


def copy_with(root: Path, part: str) -> Path:
    """advaudit, conf/ and examine.py under ``root``, with ``part``'s module and YAML added (nothing else)."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "advaudit", root / "advaudit", ignore=ignore)
    shutil.copytree(REPO / "conf", root / "conf", ignore=ignore)
    shutil.copy(REPO / "examine.py", root / "examine.py")
    for path, text in ADDED[part].items():
        (root / path).write_text(text)
    return root


def run_python(root: Path, args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_registry_finds_a_new_world_and_a_new_scorer(tmp_path: Path) -> None:
    before = settings_modules(REPO / "advaudit")
    for part, module in (("world", "advaudit.worlds.discs"), ("scorer", "advaudit.search.outliers")):
        after = settings_modules(copy_with(tmp_path / part, part) / "advaudit")
        assert module not in before and sorted(set(after) - set(before)) == [module]


COMPOSE = textwrap.dedent('''
    import json, sys
    from hydra import compose, initialize_config_dir
    from advaudit.errors import AdvauditError
    from advaudit.registry import SCHEMAS, method_options
    from advaudit.validation import validate

    conf, target, selected, bad = sys.argv[1], sys.argv[2], sys.argv[3:5], sys.argv[5:]
    out = {"schemas": sorted(name for _, name, _ in SCHEMAS), "methods": method_options()}
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        cfg = compose("examine", overrides=[f"target={target}", *selected, "logger=none"])
        validate(cfg, "examine")
        out["world"] = [cfg.world._target_, cfg.world.image_size, str(cfg.world.device)]
        out["search"] = {k: v.get("_target_") if hasattr(v, "get") else v for k, v in cfg.search.items()}
        for override in bad:
            try:
                validate(compose("examine", overrides=[f"target={target}", *selected, override]), "examine")
                out[override] = None
            except AdvauditError as error:
                out[override] = str(error)
    print(json.dumps(out))
''')


def compose_in_copy(tmp_path: Path, part: str, selected: list[str], bad: list[str]) -> dict:
    root = copy_with(tmp_path / "repo", part)
    target = tmp_path / "target.pt"
    target.write_bytes(b"stand-in: validation only checks that the file is there")
    done = run_python(root, ["-c", COMPOSE, str(root / "conf"), str(target), *selected, *bad])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_world_is_composed_and_validated(tmp_path: Path) -> None:
    bad = ["world.factors={sise:[0.2,0.3]}", "world.factors={size:[0.4,0.3]}", "world.image_size=4"]
    out = compose_in_copy(tmp_path, "world", ["world=discs", "audit=worst_case"], bad)
    assert "discs_schema" in out["schemas"]
    assert out["world"] == ["advaudit.worlds.discs.DiscWorld", 32, "cpu"]
    assert "sise" in out[bad[0]] and "size" in out[bad[0]]          # the factor names come from the module
    assert "world.factors.size has low=0.4 > high=0.3" in out[bad[1]]
    assert "world.image_size=4" in out[bad[2]]


def test_a_new_scorer_is_composed_beside_the_others_and_validated(tmp_path: Path) -> None:
    bad = ["search.outliers.power=0", "+search.outliers.powr=1"]
    out = compose_in_copy(tmp_path, "scorer", ["audit=error_search", "search=outliers"], bad)
    assert "outliers" in out["methods"] and "outliers" not in method_options()
    assert out["search"]["name"] == "outliers"
    assert out["search"]["outliers"] == "advaudit.search.outliers.OutliersFirst"
    assert {"adversarial_distance", "gad", "random", "lakkaraju"} <= set(out["search"])  # the built-in ones stay
    assert "search.outliers.power=0" in out[bad[0]]
    assert "powr" in out[bad[1]] and "power" in out[bad[1]]


@pytest.mark.slow
def test_a_new_world_runs_the_gallery(tmp_path: Path) -> None:
    """``examine.py audit=gallery world=discs``: one sweep of each of its three factors per instance."""
    root = copy_with(tmp_path / "repo", "world")
    done = run_python(root, ["examine.py", "audit=gallery", "world=discs", "world.image_size=16", "audit.n_instances=2",
                             "logger=none", f"hydra.run.dir={tmp_path / 'run'}"], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["factors"] == ["size", "shift_x", "brightness"]
    assert sorted(p.name for p in (tmp_path / "run").glob("gallery_*.png")) == ["gallery_0.png", "gallery_1.png"]


@pytest.mark.slow
def test_a_new_scorer_runs_an_error_search(tmp_path: Path, tiny_fmnist_target: Path) -> None:
    """``examine.py audit=error_search search=outliers``: reported first, beside random, on the same pools."""
    root = copy_with(tmp_path / "repo", "scorer")
    done = run_python(root, ["examine.py", "audit=error_search", "search=outliers", f"target={tiny_fmnist_target}",
                             "audit.compare=[random]", "audit.tau=0.3", "audit.pool_size=20", "audit.replications=5",
                             "audit.budget=5", "audit.report_at=[5]", "logger=none",
                             f"hydra.run.dir={tmp_path / 'run'}"], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["search/sdr@5"] == result["search/outliers/sdr@5"]
    assert result["search/outliers/mean_distance"] > 0 and "search/random/sdr@5" in result
