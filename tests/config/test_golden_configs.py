"""Every experiment config and README command composes to the values recorded in the golden file.

Regenerate ``tests/config/data/golden_configs.json`` (only for a change of a composed value that is
meant, and said so in the commit) with ``PYTHONPATH=$PWD python -m tests.config.golden``.
"""

from __future__ import annotations

import json

from tests.config.golden import GOLDEN, all_configs, differences, readme_commands


def test_every_experiment_and_readme_command_composes_as_recorded() -> None:
    golden = json.loads(GOLDEN.read_text())
    now = json.loads(json.dumps(all_configs()))  # through JSON, as the golden file was written
    assert sorted(now) == sorted(golden), f"entries added {sorted(set(now) - set(golden))}, " \
        f"removed {sorted(set(golden) - set(now))}"
    changed = {name: differences(golden[name], now[name]) for name in golden}
    changed = {name: diff for name, diff in changed.items() if diff}
    assert not changed, "\n".join(f"{name}:\n  " + "\n  ".join(diff) for name, diff in changed.items())


def test_readme_commands_are_found_and_sweeps_expanded() -> None:
    commands = readme_commands()
    assert ("train", ["model=cnn", "seed=1"]) in commands and ("train", ["model=resnet18", "seed=2"]) in commands
    # placeholders become plain words; backslash continuations are joined
    assert ("examine", ["world=shapes", "examiner=bo", "target=target_pt", "audit.budget=500",
                        "audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]"]) in commands
    assert len(commands) >= 60


def test_differences_name_each_changed_key() -> None:
    old = {"audit": {"chunk": 200, "k": 2}, "seed": 0}
    new = {"audit": {"chunk": 400, "k": 2, "extra": 1}}
    assert differences(old, new) == ["audit.chunk: 200 -> 400", "audit.extra: added (1)", "seed: removed (was 0)"]
