"""Unknown keys anywhere in a config are refused with the closest valid key; every shipped config,
experiment and README command composes and validates without one."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException

from advaudit.validation import validate
from advaudit.registry import unknown_argument_problems, unknown_key_problems
from advaudit.errors import AdvauditError, classify
from tests.conftest import CONF_DIR, REPO, compose_config

EXPERIMENTS = sorted(str(p.relative_to(CONF_DIR / "experiment"))[:-5] for p in (CONF_DIR / "experiment").rglob("*.yaml"))
GROUP_OPTIONS = [(task, group, p.stem) for task, groups in (("train", ("dataset", "model", "trainer", "logger",
                                                                        "callbacks", "paths", "debug")),
                                                             ("examine", ("audit", "world", "examiner", "search",
                                                                          "logger", "paths")))
                 for group in groups for p in sorted((CONF_DIR / group).glob("*.yaml"))]


def all_problems(cfg, task: str) -> list[str]:
    """Unknown keys judged by the schemas and by the ``_target_`` callables' signatures."""
    return unknown_key_problems(cfg, task) + unknown_argument_problems(cfg, task)


def _task_of(experiment: str) -> str:
    return "train" if Path(experiment).name.startswith("train") else "examine"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A file and a folder standing in for the checkpoints and data folders a command names."""
    root = tmp_path_factory.mktemp("stand_ins")
    (root / "model.pt").write_bytes(b"stand-in")
    (root / "data").mkdir()
    return {"file": root / "model.pt", "dir": root / "data", "root": root}


def _with_files(files: dict[str, Path]) -> list[str]:
    return [f"target={files['file']}", f"generator={files['file']}"]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_and_validates(experiment: str, files: dict[str, Path]) -> None:
    task = _task_of(experiment)
    cfg = compose_config(task, [f"experiment={experiment}", *(_with_files(files) if task == "examine" else [])],
                         files["root"])
    assert all_problems(cfg, task) == []
    validate(cfg, task)


@pytest.mark.parametrize("task,group,option", GROUP_OPTIONS)
def test_every_group_option_has_only_known_keys(task: str, group: str, option: str, tmp_path: Path) -> None:
    cfg = compose_config(task, [f"{group}={option}"], tmp_path)
    assert all_problems(cfg, task) == []


def readme_commands() -> list[tuple[str, list[str], str | None]]:
    """``(task, overrides, --config-dir)`` of every ``train.py`` / ``examine.py`` command in the README."""
    text = (REPO / "README.md").read_text()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"<[^<>]*>", "PLACEHOLDER", line)  # <fmnist target.pt>: one word
            match = re.match(r"\s*(?:\.venv/bin/python\s+)?(train|examine)\.py\s(.*)", line)
            if match:
                words = shlex.split(match.group(2), comments=True)
                config_dir = words[words.index("--config-dir") + 1] if "--config-dir" in words else None
                overrides = [w for w in words if not w.startswith("-") and w != config_dir]
                commands.append((match.group(1), overrides, config_dir))
    return commands


def readme_config_files(root: Path) -> None:
    """Write the README's example config files (a YAML block after "(`my_conf/...yaml`):") under ``root``."""
    text = (REPO / "README.md").read_text()
    for path, body in re.findall(r"\(`([\w/.-]+\.yaml)`\):\s*```yaml\n(.*?)```", text, flags=re.S):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(body)


def _first_choice(override: str) -> str:
    """``key=a,b`` (a sweep) -> ``key=a``; commas inside brackets and braces are kept."""
    key, _, value = override.partition("=")
    depth, cut = 0, len(value)
    for i, char in enumerate(value):
        depth += char in "[{"
        depth -= char in "]}"
        if char == "," and depth == 0:
            cut = i
            break
    return f"{key}={value[:cut]}"


def _stand_in(override: str, files: dict[str, Path]) -> str:
    """Placeholders (``<target.pt>``, ``...``, ``/data/...``, ``glob:``) replaced by a real file or folder."""
    key, _, value = override.partition("=")
    stand_in = files["dir"] if key.endswith("root") else files["file"]
    if value == "[PLACEHOLDER]":
        return f"{key}=[{stand_in}]"
    if any(mark in value for mark in ("PLACEHOLDER", "...", "glob:", "list:")) or value.startswith("/data/") \
            or value.endswith(".pt"):
        return f"{key}={stand_in}"
    return override


README_COMMANDS = readme_commands()


def test_the_readme_has_commands_to_check() -> None:
    assert len(README_COMMANDS) >= 40 and {task for task, _, _ in README_COMMANDS} == {"train", "examine"}


@pytest.mark.parametrize("index", range(len(README_COMMANDS)))
def test_every_readme_command_composes_and_validates(index: int, files: dict[str, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key of every command is accepted and every rule holds; the files and folders it names
    are the user's (checkpoints, data, a config folder written from the README's own example)."""
    from advaudit.config.validation import Context

    task, words, config_dir = README_COMMANDS[index]
    overrides = [_stand_in(_first_choice(w), files) for w in words]
    if config_dir is not None:
        readme_config_files(files["root"])
        overrides.append(f"hydra.searchpath=[file://{files['root'] / config_dir}]")
    elif task == "examine" and not any(o.startswith(("target=", "audit=gallery")) for o in overrides):
        overrides.append(f"target={files['file']}")
    cfg = compose_config(task, overrides, files["root"])
    assert all_problems(cfg, task) == [], overrides
    monkeypatch.setattr(Context, "file", lambda *args: None)  # the user's files are not here
    validate(cfg, task)


# -- refused: one line with the key and the closest valid key ---------------------------------------
REFUSED = [
    ("examine", ["+target_class=3"], "the config has unknown keys ['target_class'] (nothing would read them); "
                                     "did you mean target for target_class?"),
    ("train", ["+sed=3"], "did you mean seed for sed?"),
    ("examine", ["+audit.bugdet=8"], "did you mean audit.budget for audit.bugdet?"),
    ("examine", ["+audit.validity.min_extnet=0.2"], "did you mean audit.validity.min_extent"),
    ("examine", ["examiner=bo", "+examiner.betta=2"], "did you mean examiner.beta for examiner.betta?"),
    ("examine", ["+world.imagesize=16"], "did you mean world.image_size for world.imagesize?"),
    ("examine", ["+search.gad.pseudo_model.epoch=3"], "did you mean search.gad.pseudo_model.epochs"),
    ("train", ["+dataset.batchsize=3"], "did you mean dataset.batch_size for dataset.batchsize?"),
    ("train", ["+model.arhc={width:8}"], "did you mean model.arch for model.arhc?"),
    ("train", ["+model.arch.depth=3"], "model.arch has unknown keys ['depth'] (nothing would read them); its keys are"),
    ("train", ["model=resnet18", "+model.arch.widht=8"], "did you mean model.arch.width for model.arch.widht?"),
    ("train", ["model=generator", "+model.latentdim=8"], "did you mean model.latent_dim"),
    ("train", ["model=svm", "+model.gird={C:[1]}"], "did you mean model.grid for model.gird?"),
    ("train", ["+model.optimizer.weight_decy=0.1"], "did you mean model.optimizer.weight_decay"),
    ("train", ["+model.adversarial={norm:linf,eps:0.1,step:3}"], "did you mean model.adversarial.steps"),
    ("train", ["+trainer.max_epoch=3"], "did you mean trainer.max_epochs for trainer.max_epoch?"),
    ("train", ["logger=csv", "+logger.csv.nme=x"], "did you mean logger.csv.name for logger.csv.nme?"),
    ("train", ["+logger.mode=online"], "logger.mode is not a part that can be built (no _target_)"),
    ("train", ["+callbacks.model_checkpoint.every_n_epoch=2"], "did you mean callbacks.model_checkpoint.every_n_epochs"),
    ("examine", ["+paths.outdir=x"], "did you mean paths.output_dir for paths.outdir?"),
    ("examine", ["audit=evaluate", "+dataset@audit.dataset=digits", "+audit.dataset.limt={test:3}"],
     "did you mean audit.dataset.limit for audit.dataset.limt?"),
    ("examine", ["audit=evaluate", "audit.dataset={_target_:advaudit.data.fashion_mnist.FashionMNISTDataModule,"
                 "limt:{test:3}}"], "did you mean audit.dataset.limit for audit.dataset.limt?"),
    ("examine", ["world=transforms", "+world.dataset.val_fractoin=0.2"], "did you mean world.dataset.val_fraction"),
    ("examine", ["audit=worst_case", "+audit.dataset={_target_:advaudit.data.sklearn_sets.DigitsDataModule}"],
     "only audit=evaluate and audit=error_search read a dataset"),
]


@pytest.mark.parametrize("task,overrides,message", REFUSED, ids=[" ".join(o) for _, o, _ in REFUSED])
def test_an_unknown_key_is_refused_with_the_closest_valid_key(task: str, overrides: list[str], message: str,
                                                             files: dict[str, Path], tmp_path: Path) -> None:
    cfg = compose_config(task, [*overrides, *(_with_files(files) if task == "examine" else [])], tmp_path)
    with pytest.raises(AdvauditError) as refused:
        validate(cfg, task)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_every_unknown_key_is_named_at_once(tmp_path: Path) -> None:
    cfg = compose_config("train", ["+sed=3", "+dataset.batchsize=3", "+paths.outdir=x"], tmp_path)
    with pytest.raises(AdvauditError, match="^3 problems in the config: .*did you mean seed.*did you mean "
                                            "dataset.batch_size.*did you mean paths.output_dir"):
        validate(cfg, "train")


def test_target_blocks_are_judged_once_everything_else_passes(tmp_path: Path) -> None:
    """Their callables are imported (seconds for pytorch_lightning) only for a config about to run."""
    cfg = compose_config("train", ["+trainer.max_epoch=3", "trainer.max_epochs=0"], tmp_path)
    with pytest.raises(AdvauditError, match="^trainer.max_epochs=0 trains nothing"):
        validate(cfg, "train")
    with pytest.raises(AdvauditError, match="^trainer has unknown keys"):
        validate(compose_config("train", ["+trainer.max_epoch=3"], tmp_path), "train")


def test_refusing_an_examine_config_imports_no_lightning(tmp_path: Path) -> None:
    """examine.py's logger blocks are not built, so judging its config needs no pytorch_lightning."""
    code = ("import sys; from pathlib import Path; from tests.conftest import compose_config; "
            "from advaudit.validation import validate\n"
            f"cfg = compose_config('examine', ['+target_class=3', 'target={tmp_path}'], Path({str(tmp_path)!r}))\n"
            "try:\n    validate(cfg, 'examine')\nexcept ValueError as e:\n    print(e)\n"
            "print('lightning imported:', 'pytorch_lightning' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert "did you mean target for target_class?" in done.stdout, done.stderr[-2000:]
    assert "lightning imported: False" in done.stdout


@pytest.mark.parametrize("task,overrides", [
    ("examine", ["+world.factors={camera_elevation:[-30,30]}"]),
    ("train", ["+dataset.bias.max_per_group={m:2,group:class}"]),
    ("examine", ["search=lakkaraju", "search.lakkaraju.clusters=4"]),
    ("examine", ["+search.adversarial_distance.attack.params={steps:3}"]),
    ("train", ["+logger.wandb.notes=x"]),                         # W&B's logger takes **kwargs
    ("train", ["+trainer.enable_progress_bar=false"]),
    ("train", ["+hydra.job.env_set.X=1"]),
    ("examine", ["target={_target_:torchvision.models.resnet18,weights:w.pt,class_map:{a:0}}"]),  # its loader checks it
    ("examine", ["audit=evaluate", "+dataset@audit.dataset=fashion_mnist", "audit.dataset.limit={test:3}"]),
])
def test_open_blocks_keep_their_own_keys(task: str, overrides: list[str], tmp_path: Path) -> None:
    assert all_problems(compose_config(task, overrides, tmp_path), task) == []


def test_a_misspelt_override_without_plus_names_the_closest_key(tmp_path: Path) -> None:
    """Hydra refuses ``audit.bugdet=8`` itself; the message is the same line, with the closest key."""
    for overrides, message in ((["audit.bugdet=8"], "audit has unknown keys ['bugdet'] (nothing would read them); "
                                                    "did you mean audit.budget for audit.bugdet?"),
                               (["targt=x"], "did you mean target for targt?"),
                               (["trainer.max_epoch=3"], "did you mean trainer.max_epochs for trainer.max_epoch?")):
        task = "train" if overrides[0].startswith("trainer") else "examine"
        with pytest.raises(ConfigCompositionException) as refused:
            compose_config(task, overrides, tmp_path)
        kind, line = classify(refused.value)
        assert kind == "user" and line.endswith(message), line
    with pytest.raises(ConfigCompositionException) as open_key:  # an open mapping: Hydra's "+" is the fix
        compose_config("train", ["dataset.bias.drop_subgroup=3"], tmp_path)
    assert "To append to your config use +dataset.bias.drop_subgroup=3" in classify(open_key.value)[1]
