"""An architecture and an audit defined only here plug in as one class (or function) plus one YAML file.

The architecture's module is written to a folder of the test's own, put on ``PYTHONPATH``; its YAML
and the audit's go to a config folder passed with ``--config-dir``; nothing in advaudit names them.
Both run through the real ``train.py`` / ``examine.py`` (several command lines per interpreter:
:mod:`tests.cli_batch`). A target file trained with that architecture is rebuilt only when the
examining config names the architecture: the file alone never makes advaudit import its module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import DictConfig, OmegaConf

from advaudit.audits.common import load_audit_target, target_datamodule
from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.tasks import named_function
from tests.conftest import REPO

ARCH = "parts_test_nets.TinyNet"

#: the user's architecture: a module of its own; every import of it is logged with the command line
NETS_MODULE = """\
import sys
from pathlib import Path

import torch
from torch import nn

with open(Path(__file__).with_name("imports.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")


class TinyNet(nn.Module):
    \"\"\"Flatten, Linear(hidden), ReLU, Linear(num_classes): [B, *input_shape] -> [B, num_classes].\"\"\"

    def __init__(self, input_shape, num_classes, hidden=16):
        super().__init__()
        width = 1
        for d in input_shape:
            width *= int(d)
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.body(x)
"""

MODEL_YAML = f"""\
defaults:
  - classifier_schema
  - _self_
name: tiny
arch:
  _target_: {ARCH}
  _partial_: true
  hidden: 24
optimizer:
  _target_: torch.optim.Adam
  _partial_: true
  lr: 0.01
"""

AUDIT_YAML = """\
name: census
run:
  _target_: tests.plugins.test_parts.census
  _partial_: true
level: 0.25
"""

QUIET = ["logger=none", "threads=1"]
TRAIN = ["model=tiny", "dataset=digits", "trainer.max_epochs=2", "callbacks=none",
         "+trainer.enable_progress_bar=false", "+trainer.enable_model_summary=false"]


def census(cfg: DictConfig) -> dict[str, Any]:
    """An audit of the test's own: the target's class count, its predicted class of an all-zero input, and
    twice ``audit.level``; writes ``census.json`` in the run dir."""
    target = load_audit_target(cfg)
    zero = torch.zeros(1, *target.input_shape)
    result = {"census/classes": target.num_classes, "census/zero_class": int(target.predict_proba(zero).argmax()),
              "census/double_level": 2 * float(cfg.audit.level)}
    (Path(cfg.paths.output_dir) / "census.json").write_text(json.dumps(result))
    return result


def run_batch(cases: dict[str, tuple[str, list[str]]], root: Path, nets: Path, conf: Path) -> dict[str, dict]:
    """Run ``{name: (script, args)}`` in one interpreter with ``nets`` on PYTHONPATH and ``conf`` as the
    extra config folder; ``name -> {"code", "stdout", "stderr"}``."""
    batch = {name: {"script": script, "args": ["--config-dir", str(conf), *QUIET, *args,
                                                f"hydra.run.dir={root / name}"]}
             for name, (script, args) in cases.items()}
    (root / "cases.json").write_text(json.dumps(batch))
    env = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(nets), str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tests.cli_batch", str(root / "cases.json"), str(root / "out.json")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "out.json").read_text())


def error_line(result: dict) -> str:
    """The one ``error: `` line of a refused command (exit code 2, no traceback)."""
    output = result["stdout"] + result["stderr"]
    assert result["code"] == 2, output[-3000:]
    assert "Traceback" not in output
    errors = [line for line in result["stderr"].splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result["stderr"][-2000:]
    return errors[0][len("error: "):]


@pytest.fixture(scope="module")
def plugged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The architecture trained by train.py, then examined three ways by examine.py (two processes)."""
    root = tmp_path_factory.mktemp("parts")
    nets, conf = root / "nets", root / "my_conf"
    nets.mkdir()
    (nets / "parts_test_nets.py").write_text(NETS_MODULE)
    for group, name, text in (("model", "tiny", MODEL_YAML), ("audit", "census", AUDIT_YAML)):
        (conf / group).mkdir(parents=True)
        (conf / group / f"{name}.yaml").write_text(text)
    trained = run_batch({"train": ("train.py", TRAIN),
                         "misspelt": ("train.py", [*TRAIN, "+model.arch.hiden=8"]),
                         "supplied": ("train.py", [*TRAIN, "+model.arch.num_classes=3"])}, root, nets, conf)
    checkpoint = root / "train" / "checkpoints" / "target.pt"
    assert trained["train"]["code"] == 0, trained["train"]["stderr"][-3000:]
    named = f"target={{path:{checkpoint},architecture:{ARCH}}}"
    examined = run_batch({"refused": ("examine.py", ["audit=evaluate", f"target={checkpoint}"]),
                          "evaluate": ("examine.py", ["audit=evaluate", named]),
                          "census": ("examine.py", ["audit=census", "audit.level=0.5", named])}, root, nets, conf)
    return {"root": root, "nets": nets, "checkpoint": checkpoint, **trained, **examined}


def test_an_architecture_defined_only_here_trains_and_is_examined(plugged: dict[str, Any],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root, checkpoint = plugged["root"], plugged["checkpoint"]
    trained = json.loads((root / "train" / "result.json").read_text())
    assert trained["status"] == "ok" and trained["trainer"] == "advaudit.models.classifier_training.train_classifier"
    assert trained["config"]["model"]["arch"] == {"_target_": ARCH, "_partial_": True, "hidden": 24}
    payload = torch.load(checkpoint, weights_only=True)
    assert payload["meta"]["arch"] == ARCH and payload["meta"]["arch_params"] == {"hidden": 24}
    assert payload["state_dict"]["net.body.1.weight"].shape == (24, 64)   # 8 x 8 digits in, hidden 24 out

    result = plugged["evaluate"]
    assert result["code"] == 0, result["stderr"][-3000:]
    evaluated = json.loads((root / "evaluate" / "result.json").read_text())
    assert evaluated["status"] == "ok"
    assert evaluated["target_loading"] == f"code named in the config (architecture: {ARCH})"
    # the accuracy examine.py reports is the rebuilt network's own on the digits test split
    monkeypatch.syspath_prepend(str(plugged["nets"]))
    target = load_target(checkpoint, architectures=[ARCH])
    test = target_datamodule(target).split("test")
    accuracy = float((target.predict_proba(test.x).argmax(1) == test.y).float().mean())
    assert evaluated["evaluate/acc"] == pytest.approx(accuracy, abs=1e-6) and accuracy > 0.5


def test_a_target_file_alone_never_imports_its_architecture(plugged: dict[str, Any]) -> None:
    line = error_line(plugged["refused"])
    checkpoint = plugged["checkpoint"]
    assert line == (f"{checkpoint} was trained with architecture {ARCH}, which is not advaudit's own; a file never "
                    f"makes advaudit import code, so name it in your config: target={{path: {checkpoint}, "
                    f"architecture: {ARCH}}}")
    imports = (plugged["nets"] / "imports.log").read_text().splitlines()
    assert not any("refused" in args for args in imports)          # the refused run never imported the module
    assert any("hydra.run.dir" in args and "/evaluate" in args for args in imports)   # the named one did


def test_an_unknown_or_supplied_architecture_key_is_refused(plugged: dict[str, Any]) -> None:
    assert "did you mean model.arch.hidden for model.arch.hiden?" in error_line(plugged["misspelt"])
    assert "model.arch has unknown keys ['num_classes']" in error_line(plugged["supplied"])
    assert not (plugged["root"] / "misspelt" / "checkpoints").exists()


def test_an_audit_defined_only_here_runs_from_examine_py(plugged: dict[str, Any]) -> None:
    result = plugged["census"]
    assert result["code"] == 0, result["stderr"][-3000:]
    record = json.loads((plugged["root"] / "census" / "result.json").read_text())
    written = json.loads((plugged["root"] / "census" / "census.json").read_text())
    assert record["audit"] == "census" and record["census/classes"] == 10 and record["census/double_level"] == 1.0
    assert written["census/zero_class"] == record["census/zero_class"] and 0 <= written["census/zero_class"] < 10
    assert record["config"]["audit"]["run"] == {"_target_": "tests.plugins.test_parts.census", "_partial_": True}


def test_a_function_block_that_cannot_run_is_one_line() -> None:
    with pytest.raises(AdvauditError, match=r"^audit.run._target_=my_audits.nope.run cannot be imported "
                                            r"\(ModuleNotFoundError: No module named 'my_audits'\); correct audit.run._target_"):
        named_function(OmegaConf.create({"_target_": "my_audits.nope.run", "_partial_": True}), "audit.run")
    with pytest.raises(AdvauditError, match=r"^model.train must be a block \{_target_: <module.function>, "
                                            r"_partial_: true\}.*not 'classifier'$"):
        named_function("classifier", "model.train")
    with pytest.raises(AdvauditError, match=r"^audit.run must be a block"):
        named_function(OmegaConf.create({"_target_": "tests.plugins.test_parts.census"}), "audit.run")
    run = named_function(OmegaConf.create({"_target_": "tests.plugins.test_parts.census", "_partial_": True}),
                         "audit.run")
    assert run.func is census
