"""A mistyped or missing name in a target block, through the real CLIs (``examine.py`` for the worst-case
audit and evaluate, ``advaudit import``): one line naming the key, the value, the closest existing name
and the fix, exit code 2, no traceback, ``result.json`` recording a user error (not a bug)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO
from tests.test_bad_input import ENV, QUIET

pytestmark = pytest.mark.slow  # 25 s for the batch, 15 s for the process of its own (imports, 2 shared cores)

FMNIST = "[t-shirt,trouser,pullover,dress,coat,sandal,shirt,sneaker,bag,boot]"
COMMON = f"class_names:{FMNIST},input_shape:[1,28,28],normalization:model,dataset:fashion_mnist"


def cases(root: Path) -> dict[str, tuple[str, list[str], str]]:
    """``name -> (script, args, the end of the one error line)``."""
    weights = root / "net.pt"
    function = f"target={{function:tests.models.user_models.brightnes_votes,array:numpy,{COMMON}}}"
    spec = root / "typo.yaml"
    spec.write_text(f"target:\n  model: {{_target_: torchvision.models.resnet81, num_classes: 10}}\n  path: {weights}\n"
                    f"  class_names: {FMNIST}\n  input_shape: [3, 32, 32]\n  normalization: model\n")
    function_spec = root / "function.yaml"
    function_spec.write_text(f"function: tests.models.user_models.brightness_votes\nclass_names: {FMNIST}\n"
                             "input_shape: [1, 28, 28]\nnormalization: model\n")
    lightning_spec = root / "lightning.yaml"
    lightning_spec.write_text(f"lightning_module: tests.models.user_models.LitNte\npath: {root / 'lit.ckpt'}\n"
                              f"class_names: {FMNIST}\ninput_shape: [1, 28, 28]\nnormalization: model\n")
    fix = "did you mean target.function=tests.models.user_models.brightness_votes?"
    return {
        "function_typo_worst_case": ("examine.py", [function, "world=transforms"], fix),
        "function_typo_evaluate": ("examine.py", [function, "audit=evaluate"], fix),
        "function_not_on_pythonpath": ("examine.py", [f"target={{function:my_predictors.predict,{COMMON}}}",
                                                      "audit=evaluate"],
                                       "correct target.function (or put the folder that holds my_predictors on "
                                       "PYTHONPATH)"),
        "lightning_module_typo": ("examine.py", [f"target={{lightning_module:tests.models.user_models.LitNte,"
                                                 f"path:{root / 'lit.ckpt'},{COMMON}}}", "audit=evaluate"],
                                  "did you mean target.lightning_module=tests.models.user_models.LitNet?"),
        "model_target_typo": ("examine.py", [f"target={{model:{{_target_:torchvision.models.resnet81,num_classes:10}},"
                                             f"path:{weights},{COMMON}}}", "audit=evaluate"],
                              "did you mean target.model._target_=torchvision.models.resnet18?"),
        "import_model_typo": ("advaudit/__main__.py", ["import", str(spec), "--out", str(root / "out.pt")],
                              "did you mean target.model._target_=torchvision.models.resnet18?"),
        "import_lightning_module_typo": ("advaudit/__main__.py", ["import", str(lightning_spec), "--out",
                                                                  str(root / "out.pt")],
                                         "did you mean target.lightning_module=tests.models.user_models.LitNet?"),
        "import_a_function": ("advaudit/__main__.py", ["import", str(function_spec), "--out", str(root / "out.pt")],
                              "a prediction function is code, not data: it cannot be stored in a file; audit it with "
                              "target={function: ...} directly"),
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case run once, in one interpreter (:mod:`tests.cli_batch`)."""
    root = tmp_path_factory.mktemp("recipe_mistakes")
    torch.save(torch.nn.Linear(2, 2).state_dict(), root / "net.pt")
    torch.save({"state_dict": {"net.weight": torch.zeros(2, 2)}, "pytorch-lightning_version": "2.5.0"}, root / "lit.ckpt")
    batch = {}
    for name, (script, args, _) in cases(root).items():
        extra = [*QUIET, f"hydra.run.dir={root / name}"] if script == "examine.py" else []
        batch[name] = {"script": script, "args": [*extra, *args]}
    (root / "cases.json").write_text(json.dumps(batch))
    done = subprocess.run([sys.executable, "-m", "tests.cli_batch", str(root / "cases.json"), str(root / "out.json")],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((root / "out.json").read_text())
    assert sorted(found) == sorted(CASE_NAMES)
    return {name: {**found[name], "run_dir": root / name, "expected": cases(root)[name][2]} for name in found}


CASE_NAMES = ["function_typo_worst_case", "function_typo_evaluate", "function_not_on_pythonpath", "lightning_module_typo",
              "model_target_typo", "import_model_typo", "import_lightning_module_typo", "import_a_function"]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_a_mistyped_name_is_one_line_naming_the_key_and_the_fix(name: str, results: dict[str, dict]) -> None:
    result = results[name]
    output = result["stdout"] + result["stderr"]
    assert result["code"] == 2 and "Traceback" not in output, output[-3000:]
    [line] = [x for x in result["stderr"].splitlines() if x.startswith("error: ")]
    assert line.endswith(result["expected"]), line
    record = result["run_dir"] / "result.json"
    if record.exists():
        saved = json.loads(record.read_text())
        assert saved["status"] == "failed" and saved["error_kind"] == "user" and f"error: {saved['error']}" == line


def test_the_exit_code_of_the_process_itself_is_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "examine.py", *QUIET, "audit=evaluate", f"hydra.run.dir={tmp_path / 'run'}",
                           f"target={{function:tests.models.user_models.brightnes_votes,{COMMON}}}"],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith(
        "error: target.function=tests.models.user_models.brightnes_votes cannot be imported"), done.stderr[-2000:]
    assert json.loads((tmp_path / "run" / "result.json").read_text())["error_kind"] == "user"
