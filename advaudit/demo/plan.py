"""The demo's command lines: two multiruns (train, unless the shipped checkpoints are used; examine), all
under one output folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

# the two checkpoints (conf/experiment/demo/train_*.yaml set their run folders' names)
TRAIN_EXPERIMENTS = ("demo/train_control", "demo/train_roll_narrowed")
EXAMINE_EXPERIMENTS = ("demo/rl", "demo/bo")
# a seconds-long run for tests: tiny data and budgets; its numbers mean nothing (dataset and model are
# named because a multirun checks overrides against the config before the swept experiment applies)
QUICK_TRAIN = ["dataset=shapes", "model=resnet18", "dataset.image_size=16",
               "dataset.instances_per_class={train:6,val:2,test:2}", "dataset.m=2", "dataset.m_eval=2",
               "trainer.max_epochs=1", "model.arch.width=8"]
QUICK_EXAMINE = ["world.image_size=16", "world.instances_per_class={train:6,val:2,test:2}", "audit.n_instances=6",
                 "audit.budget=3", "audit.report_budgets=[0,3]"]


@dataclass
class DemoPlan:
    """Where the demo writes and what it runs.

    Attributes:
        root: the demo's folder (``outputs/demo/<time>``): ``train/`` (the training multirun, or the shipped
            checkpoints copied there), the ``examine/`` multirun, their logs, ``summary.txt`` and ``demo.json``.
        seed: examination seed (and training seed when the checkpoints are trained).
        quick: tiny sizes (tests); the findings of a quick run are not meaningful.
        train: train the two checkpoints instead of using the shipped ones (:mod:`advaudit.demo.shipped`).
        launcher: Hydra launcher of the multiruns (``parallel``: two jobs at once, one core each).
    """

    root: Path
    seed: int = 0
    quick: bool = False
    launcher: str = "parallel"
    train: bool = False

    @property
    def train_dir(self) -> Path:
        return self.root / "train"

    @property
    def examine_dir(self) -> Path:
        return self.root / "examine"

    @property
    def comparison_dir(self) -> Path:
        return self.examine_dir / "comparison"

    @property
    def wandb_group(self) -> str:
        """One W&B group for every run of the demo: training, examinations and the comparison."""
        return f"demo-{self.root.name}"

    def _common(self, sweep_dir: Path) -> list[str]:
        return [f"hydra/launcher={self.launcher}", f"seed={self.seed}", f"logger.wandb.group={self.wandb_group}",
                f"hydra.sweep.dir={sweep_dir}"]

    @property
    def epochs(self) -> int:
        """Training epochs per checkpoint (conf/experiment/demo/train_control.yaml; 1 when quick)."""
        if self.quick:
            return 1
        conf = Path(__file__).resolve().parents[2] / "conf" / "experiment" / "demo" / "train_control.yaml"
        return int(OmegaConf.load(conf).trainer.max_epochs)

    def train_args(self) -> list[str]:
        """``train.py -m ...``: both checkpoints in one multirun."""
        return ["train.py", "-m", "experiment=" + ",".join(TRAIN_EXPERIMENTS), *self._common(self.train_dir),
                *(QUICK_TRAIN if self.quick else [])]

    def checkpoints(self) -> list[Path]:
        """The checkpoints the training multirun writes, in :data:`TRAIN_EXPERIMENTS` order."""
        return [self.train_dir / name.split("train_", 1)[1] / "checkpoints" / "target.pt" for name in TRAIN_EXPERIMENTS]

    def examine_args(self) -> list[str]:
        """``examine.py -m ...``: both checkpoints x both examiners, compared at the end."""
        pattern = self.train_dir / "*" / "checkpoints" / "target.pt"
        return ["examine.py", "-m", "experiment=" + ",".join(EXAMINE_EXPERIMENTS), f"target=glob:{pattern}",
                *self._common(self.examine_dir), *(QUICK_EXAMINE if self.quick else [])]

    def compare_args(self) -> list[str]:
        """What the examination multirun ran at its end, as a user would rerun it."""
        return ["-m", "advaudit.compare", str(self.examine_dir), "--out", str(self.comparison_dir)]
