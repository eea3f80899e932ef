"""Bad input through the real CLIs: one clear line naming the key or file, exit code 2, no traceback.

Each case is a command line a user could type. Most run batched in one interpreter
(:mod:`tests.cli_batch`: the scripts run as ``__main__``, as ``python examine.py ...`` would) to
spare 3-5 s of imports per case; a few run as separate processes to pin the process exit code.
Every case asserts: exit code 2, no "Traceback", the offending key or path in the message, and no
``result.json`` claiming success.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO

ENV = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1",
       "MKL_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "", "ADVAUDIT_DEBUG": ""}
QUIET = ["logger=none", "threads=1"]
TINY = "dataset.limit={train:60,val:20,test:20}"


def make_bad_files(root: Path, target: Path) -> dict[str, Path]:
    """Files that are not what a user meant to pass (each named in a case below), made under ``root``
    from a real ``target`` (its ``resume.ckpt`` next to it is the Lightning checkpoint)."""
    from advaudit.models.generators.generator import save_generator
    from advaudit.models.generators.generator import ConditionalGenerator

    files = {"target": target, "missing": root / "no_such_model.pt", "dir": root / "a_dir.pt",
             "empty": root / "empty.pt", "text": root / "notes.pt", "state_dict": root / "weights.pt",
             "lightning": target.parent / "resume.ckpt", "truncated": root / "truncated.pt",
             "generator": root / "generator.pt", "pickled_module": root / "module.pt",
             "csv_binary": root / "table.csv", "csv_text": root / "words.csv", "images": root / "images"}
    files["dir"].mkdir()
    files["empty"].touch()
    files["text"].write_text("these are my notes, not a model\n")
    payload = torch.load(target, weights_only=True)
    torch.save(payload["state_dict"], files["state_dict"])
    data = target.read_bytes()
    files["truncated"].write_bytes(data[: len(data) // 2])
    meta = {"class_names": ["a", "b"], "image_shape": [1, 28, 28], "latent_dim": 8, "width": 8}
    save_generator(ConditionalGenerator(2, (1, 28, 28), 8, 8), meta, files["generator"])
    torch.save(torch.nn.Linear(2, 2), files["pickled_module"])
    files["csv_binary"].write_bytes(bytes(range(256)) * 8)
    files["csv_text"].write_text("colour,size,label\nred,1,a\nblue,2,b\ngreen,3,a\n")
    for name in ("cat", "dog"):
        (files["images"] / name).mkdir(parents=True)
        for i in range(3):
            _png(files["images"] / name / f"{i}.png", i)
    (files["images"] / "dog" / "broken.png").write_text("not an image")
    return files


@pytest.fixture(scope="session")
def bad_files(tmp_path_factory: pytest.TempPathFactory, tiny_fmnist_target: Path) -> dict[str, Path]:
    files = make_bad_files(tmp_path_factory.mktemp("bad_files"), tiny_fmnist_target)
    assert files["lightning"].is_file(), "train.py writes checkpoints/resume.ckpt next to target.pt"
    return files


def _png(path: Path, seed: int) -> None:
    from PIL import Image

    g = torch.Generator().manual_seed(seed)
    Image.fromarray((torch.rand(12, 12, 3, generator=g) * 255).to(torch.uint8).numpy()).save(path)


def cases(f: dict[str, Path]) -> dict[str, tuple[str, list[str], str]]:
    """``name -> (script, args, text the message must contain)``."""
    t = f"target={f['target']}"
    search = ["audit=error_search", t]
    return {
        # Hydra composition: types and choices from the schemas
        "seed_not_a_number": ("examine.py", ["seed=abc", t], "seed"),
        "budget_not_a_number": ("examine.py", ["audit.budget=lots", t], "audit.budget"),
        "mode_not_a_choice": ("examine.py", ["audit.mode=weak", t], "weak"),
        "budget_unit_not_a_choice": ("examine.py", ["audit.budget_unit=seconds", t], "budget_unit"),
        "unknown_examiner": ("examine.py", ["examiner=annealing", t], "examiner/annealing"),
        "misspelt_key_added": ("examine.py", ["+audit.bugdet=8", t], "bugdet"),
        "unknown_model": ("train.py", ["model=transformer"], "model/transformer"),
        "oracle_not_a_choice": ("examine.py", ["oracle=human", *search], "human"),
        "memory_not_a_choice": ("examine.py", ["memory=spare", t], "memory"),
        # one validation step: cross-field rules, before any work
        "zero_epochs": ("train.py", ["trainer.max_epochs=0", TINY], "trainer.max_epochs"),
        "negative_lr": ("train.py", ["model.optimizer.lr=-0.1", TINY], "model.optimizer.lr"),
        "val_fraction_one": ("train.py", ["dataset.val_fraction=1.0", TINY], "dataset.val_fraction"),
        "limit_zero": ("train.py", ["dataset.limit.train=0"], "dataset.limit.train"),
        "threads_zero": ("train.py", ["threads=0", TINY], "threads"),
        "svm_on_images": ("train.py", ["model=svm", "dataset=digits"], "dataset=tabular"),
        "budget_zero": ("examine.py", ["audit.budget=0", t], "audit.budget"),
        "report_budget_beyond_budget": ("examine.py", ["audit.budget=16", "audit.report_budgets=[0,100]", t],
                                        "audit.report_budgets"),
        "factor_low_above_high": ("examine.py", ["world.factors={camera_elevation:[30,-30]}", t],
                                  "world.factors.camera_elevation"),
        "unknown_factor": ("examine.py", ["world.factors={altitude:[0,1]}", t], "altitude"),
        "unknown_fixed_factor": ("examine.py", ["audit.fixed_random=[sun_angle]", t], "audit.fixed_random"),
        "random_selection_without_n": ("examine.py", ["audit.selection=random", t], "audit.n_instances"),
        "rl_negative_lr": ("examine.py", ["examiner=rl", "examiner.lr=-1", t], "examiner.lr"),
        "precision_not_a_choice": ("examine.py", ["precision=8", t], "precision='8'"),
        "fp16_on_the_cpu": ("examine.py", ["device=cpu", "precision=16", t], "precision=16"),
        **({} if torch.cuda.is_available() else {"cuda_without_a_gpu": ("examine.py", ["device=cuda", t], "device=cuda")}),
        "pool_size_zero": ("examine.py", [*search, "audit.pool_size=0"], "audit.pool_size"),
        "search_budget_zero": ("examine.py", [*search, "audit.budget=0"],
                               "audit.budget=0; the number of queries must be >= 1 (the nearest valid value is 1)"),
        "budget_above_pool": ("examine.py", [*search, "audit.pool_size=50", "audit.budget=100"], "audit.budget=100"),
        "report_at_beyond_budget": ("examine.py", [*search, "audit.report_at=[5,500]"], "audit.report_at"),
        "tau_above_one": ("examine.py", [*search, "audit.tau=1.5"], "audit.tau"),
        "unknown_compared_method": ("examine.py", [*search, "audit.compare=[magic]"], "magic"),
        "fault_tests_without_generator": ("examine.py", ["audit=fault_tests", t], "generator"),
        "no_target": ("examine.py", [], "target="),
        "two_problems_at_once": ("examine.py", ["audit.budget=0"], "2 problems"),
        # files checked before they are trusted
        "target_missing": ("examine.py", [f"target={f['missing']}"], str(f["missing"])),
        "target_is_a_directory": ("examine.py", [f"target={f['dir']}"], "is a directory"),
        "target_empty": ("examine.py", [f"target={f['empty']}"], "empty file"),
        "target_text_file": ("examine.py", [f"target={f['text']}", "world=transforms"], "is a text file"),
        "target_plain_state_dict": ("examine.py", [f"target={f['state_dict']}", "world=transforms"], "plain state_dict"),
        "target_lightning_ckpt": ("examine.py", [f"target={f['lightning']}", "world=transforms"], "Lightning"),
        "target_truncated": ("examine.py", [f"target={f['truncated']}", "world=transforms"], "truncated"),
        "target_is_a_generator": ("examine.py", [f"target={f['generator']}", "world=transforms"], "generator=<path>"),
        "target_pickled_module": ("examine.py", [f"target={f['pickled_module']}", "world=transforms"], "needs code"),
        "generator_is_a_target": ("examine.py", ["audit=fault_tests", t, f"generator={f['target']}"], "target=<path>"),
        "world_does_not_fit_target": ("examine.py", [t, "world.image_size=16", "audit.budget=4",
                                                     "audit.report_budgets=[0,4]", "examiner=random",
                                                     "world.instances_per_class={train:1,val:1,test:1}"],
                                      "renders images of shape"),
        "csv_is_binary": ("train.py", ["model=logreg", "dataset=tabular", f"dataset.path={f['csv_binary']}"],
                          str(f["csv_binary"])),
        "csv_non_numeric": ("train.py", ["model=logreg", "dataset=tabular", f"dataset.path={f['csv_text']}"],
                            "colour"),
        "csv_is_a_directory": ("train.py", ["model=logreg", "dataset=tabular", f"dataset.path={f['dir']}"],
                               "dataset.path"),
        "image_folder_missing_root": ("train.py", ["dataset=image_folder"], "dataset.root"),
        "image_folder_not_there": ("train.py", ["dataset=image_folder", f"dataset.root={f['missing']}"],
                                   "dataset.root"),
        "unreadable_image_strict": ("train.py", ["dataset=image_folder", f"dataset.root={f['images']}",
                                                 "dataset.strict=true", "dataset.image_size=8"], "broken.png"),
        # keys nothing reads, anywhere: named with the closest valid key
        "unknown_root_key": ("examine.py", ["+target_class=3", t], "did you mean target for target_class?"),
        "unknown_trainer_key": ("train.py", ["+trainer.max_epoch=3", TINY],
                                "did you mean trainer.max_epochs for trainer.max_epoch?"),
        "misspelt_key_overridden": ("examine.py", ["audit.bugdet=8", t], "did you mean audit.budget for audit.bugdet?"),
        # audit.dataset: a dataset config holding the target's classes
        "audit_dataset_a_name": ("examine.py", ["audit=evaluate", t, "audit.dataset=fashion_mnist"],
                                 "+dataset@audit.dataset=fashion_mnist"),
        "audit_dataset_other_classes": ("examine.py", ["audit=error_search", t, "+dataset@audit.dataset=digits",
                                                       "audit.dataset.classes=[0,1,2]"],
                                        "the target's class 't-shirt' is not a class of audit.dataset (its classes: ['0', '1', '2'])"),
    }


CASE_NAMES = list(cases({k: Path(k) for k in ("target", "missing", "dir", "empty", "text", "state_dict",
                                               "lightning", "truncated", "generator", "pickled_module",
                                               "csv_binary", "csv_text", "images")}))


@pytest.fixture(scope="session")
def batch_results(bad_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case run once, in one interpreter; ``name -> {"code", "stdout", "stderr", "run_dir"}``."""
    root = tmp_path_factory.mktemp("bad_input_runs")
    batch = {name: {"script": script, "args": [*QUIET, *args, f"hydra.run.dir={root / name}"]}
             for name, (script, args, _) in cases(bad_files).items()}
    (root / "cases.json").write_text(json.dumps(batch))
    done = subprocess.run([sys.executable, "-m", "tests.cli_batch", str(root / "cases.json"), str(root / "out.json")],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((root / "out.json").read_text())
    for name in results:
        results[name]["run_dir"] = str(root / name)
    return results


@pytest.mark.parametrize("name", CASE_NAMES)
def test_bad_input_is_one_named_line_and_exit_2(name: str, batch_results: dict[str, dict],
                                                bad_files: dict[str, Path]) -> None:
    expected = cases(bad_files)[name][2]
    result = batch_results[name]
    output = result["stdout"] + result["stderr"]
    assert result["code"] == 2, output[-3000:]
    assert "Traceback" not in output and "\x1b" not in output  # plain text: no terminal colour codes
    errors = [line for line in result["stderr"].splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result["stderr"][-2000:]
    assert expected in errors[0], errors[0]
    record = Path(result["run_dir"]) / "result.json"
    if record.exists():  # a failure record, never a success
        saved = json.loads(record.read_text())
        assert saved["status"] == "failed" and saved["error_kind"] == "user"
        assert saved["error"] == errors[0][len("error: "):]
        assert "\\u001b" not in record.read_text()


def test_validation_reports_every_problem_at_once(batch_results: dict[str, dict]) -> None:
    """``examine.py`` with no target and a bad budget: both named in the one line."""
    line = next(x for x in batch_results["two_problems_at_once"]["stderr"].splitlines() if x.startswith("error: "))
    assert "no target given" in line and "audit.budget=0" in line


def test_a_composition_error_in_its_own_process_exits_2_without_traceback(tmp_path: Path) -> None:
    """Hydra's own error (raised before the task runs) through a real process exit code."""
    done = subprocess.run([sys.executable, "train.py", "seed=abc", *QUIET, f"hydra.run.dir={tmp_path}"], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("error: Error merging override seed=abc: Value 'abc' of type "
                                                    "'str' could not be converted to Integer (key: seed)")


def test_full_error_shows_the_traceback_and_still_exits_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "train.py", "trainer.max_epochs=0", *QUIET, f"hydra.run.dir={tmp_path}"],
                          cwd=REPO, env={**ENV, "ADVAUDIT_DEBUG": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" in done.stderr and "trainer.max_epochs=0" in done.stderr
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["status"] == "failed" and record["task"] == "train" and record["config"]["trainer"]["max_epochs"] == 0


def test_an_unknown_root_key_in_its_own_process_exits_2_with_the_closest_key(tmp_path: Path) -> None:
    target = tmp_path / "target.pt"
    target.write_bytes(b"not looked at: the config is refused first")
    done = subprocess.run([sys.executable, "examine.py", "+target_class=3", f"target={target}", *QUIET,
                           f"hydra.run.dir={tmp_path / 'run'}"], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("error: the config has unknown keys ['target_class'] (nothing would "
                                                    "read them); did you mean target for target_class?")
