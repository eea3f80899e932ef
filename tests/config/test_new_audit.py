"""A new built-in audit is one module plus one YAML: composed, tagged in W&B, compared and gated.

The test copies advaudit's package and ``conf/`` to a temporary folder and adds ``advaudit/audits/darkness.py``
(the audit's ``run``, its settings dataclass and, on it, its card: sections, method key, metrics with their
direction, the primary first) and ``conf/audit/darkness.yaml``, and nothing else: nothing under
``advaudit/compare/``, ``advaudit/core/`` or ``advaudit/report/`` learns its name. Two checkpoints' runs, written
as its ``run`` writes them with a planted difference (checkpoint b is right on 60% of the dimmed items where a
is right on 90%, on the same items), are compared in the copy: the group is labelled with the audit's method,
compared on its metrics in its order and direction, b is named weaker on the primary metric in the Markdown
and HTML reports, and the gate fails b. A slow test runs the audit for real with ``examine.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advaudit.registry import settings_modules

REPO = Path(__file__).resolve().parents[2]

AUDIT = '''\
"""An audit of one's own: the target's accuracy on its test items dimmed to ``audit.dim`` of their brightness."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional

import pandas as pd
from omegaconf import DictConfig

from advaudit.audits.common import load_audit_target, target_datamodule
from advaudit.config import typed
from advaudit.config.audit_card import AuditCard, Metric
from advaudit.config.part import Part
from advaudit.config.ranges import Ranged, ranged
from advaudit.config.roots import FunctionConf


@dataclass
class DarknessAuditConf(Ranged, Part):
    """``conf/audit/darkness.yaml``."""

    config_group: ClassVar[str] = "audit"
    config_path: ClassVar[str] = "audit"
    schema_name: ClassVar[Optional[str]] = "darkness_schema"
    card: ClassVar[AuditCard] = AuditCard(sections=(), method="audit.kind", metrics=(
        Metric("darkness/acc", True, "correct", binary=True, label="accuracy on dimmed items"),
        Metric("darkness/true_prob", True, "true_prob", label="true-class probability on dimmed items")))

    name: str = "darkness"
    run: FunctionConf = field(default_factory=lambda: FunctionConf("advaudit.audits.darkness.run"))
    kind: str = "dim"
    dim: float = ranged(0.5, low=0, high=1)
    n_items: int = ranged(200, low=1, integer=True)
    metric: Optional[str] = None


def run(cfg: DictConfig) -> dict[str, Any]:
    """``darkness/acc`` and ``darkness/true_prob`` over the first ``n_items`` test items; per_instance.csv."""
    audit = typed(DarknessAuditConf, cfg.audit)
    target = load_audit_target(cfg)
    split = target_datamodule(target).split("test")
    x, y = split.x[: audit.n_items] * audit.dim, split.y[: audit.n_items]           # [n, ...], [n]
    probs = target.predict_proba(x).cpu()                                             # [n, K]
    true_prob, correct = probs.gather(1, y[:, None]).squeeze(1), probs.argmax(1) == y
    pd.DataFrame({"instance": range(len(y)), "label": y.tolist(), "true_prob": true_prob.tolist(),
                  "correct": correct.tolist()}).to_csv(Path(cfg.paths.output_dir) / "per_instance.csv", index=False)
    return {"darkness/acc": float(correct.float().mean()), "darkness/true_prob": float(true_prob.mean())}
'''

AUDIT_YAML = "# Accuracy on dimmed test items. Settings: DarknessAuditConf in advaudit/audits/darkness.py.\n" \
             "defaults:\n  - darkness_schema\n  - _self_\n"


def copy_with_audit(root: Path) -> Path:
    """advaudit, conf/ and examine.py under ``root``, with the new audit's module and YAML added (nothing else)."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "advaudit", root / "advaudit", ignore=ignore)
    shutil.copytree(REPO / "conf", root / "conf", ignore=ignore)
    shutil.copy(REPO / "examine.py", root / "examine.py")
    (root / "advaudit" / "audits" / "darkness.py").write_text(AUDIT)
    (root / "conf" / "audit" / "darkness.yaml").write_text(AUDIT_YAML)
    return root


def run_python(root: Path, args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


# composes and validates audit=darkness, reads its W&B tags, writes two checkpoints' runs as its run() writes them
# (b right on 60% of the items, a on 90%), then compares them with the gate on a: prints what came out
COMPARE = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    import numpy as np, pandas as pd
    from hydra import compose, initialize_config_dir
    from advaudit.compare.__main__ import main
    from advaudit.core.records import write_json
    from advaudit.core.wandb_run import resolved_config, run_tags
    from advaudit.registry import SCHEMAS
    from advaudit.validation import validate

    conf, tmp = sys.argv[1], Path(sys.argv[2])
    out = {"schemas": sorted(name for _, name, _ in SCHEMAS)}
    correct = {"a": np.arange(200) % 10 != 0, "b": np.arange(200) % 10 >= 4}
    for name in ("a", "b"):
        target = tmp / f"{name}.pt"
        target.write_bytes(b"stand-in: validation only checks that the file is there")
        run_dir = tmp / "runs" / name
        with initialize_config_dir(config_dir=conf, version_base="1.3"):
            cfg = compose("examine", overrides=["audit=darkness", f"target={target}", "seed=0", "logger=none",
                                                f"paths.output_dir={run_dir}", f"paths.root_dir={tmp}"])
        validate(cfg, "examine")
        out["tags"] = run_tags(cfg, [])
        run_dir.mkdir(parents=True)
        pd.DataFrame({"instance": range(200), "label": np.arange(200) % 4, "true_prob": 0.3 + 0.6 * correct[name],
                      "correct": correct[name]}).to_csv(run_dir / "per_instance.csv", index=False)
        write_json(run_dir / "result.json", {"status": "ok", "task": "examine", "audit": "darkness",
                                             "darkness/acc": float(correct[name].mean()),
                                             "darkness/true_prob": float(np.mean(0.3 + 0.6 * correct[name])),
                                             "config": resolved_config(cfg)})
    out["code"] = main([str(tmp / "runs"), "--out", str(tmp / "comparison"), "--gate", str(tmp / "a.pt")])
    print(json.dumps(out))
''')


def test_the_registry_finds_a_new_audit(tmp_path: Path) -> None:
    after = settings_modules(copy_with_audit(tmp_path / "repo") / "advaudit")
    assert sorted(set(after) - set(settings_modules(REPO / "advaudit"))) == ["advaudit.audits.darkness"]


def test_a_new_audit_is_compared_and_gated_without_touching_compare(tmp_path: Path) -> None:
    root = copy_with_audit(tmp_path / "repo")
    done = run_python(root, ["-c", COMPARE, str(root / "conf"), str(tmp_path)])
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "darkness_schema" in out["schemas"]
    assert {"darkness", "dim"} <= set(out["tags"])                          # W&B: the audit and its method
    assert out["code"] == 1                                                 # the gate fails the weaker b
    summary = json.loads((tmp_path / "comparison" / "comparison.json").read_text())
    [group] = summary["groups"]
    assert (group["audit"], group["label"], group["method"]) == ("darkness", "darkness (dim)", "dim")
    assert group["metrics"] == ["darkness/acc", "darkness/true_prob"] and group["primary"] == "darkness/acc"
    [answer] = group["answers"]
    assert answer["status"] == "weaker" and "accuracy on dimmed items" in answer["text"]
    assert group["targets"][answer["weaker"]].endswith("/b")                # as the report names b.pt
    gate = (tmp_path / "comparison" / "gate.xml").read_text()
    assert gate.count("<testcase") == 1 and "<failure" in gate
    html = (tmp_path / "comparison" / "comparison.html").read_text()
    assert "darkness (dim)" in html and "accuracy on dimmed items" in html


@pytest.mark.slow
def test_a_new_audit_runs_and_its_runs_are_compared(tmp_path: Path, tiny_fmnist_target: Path) -> None:
    """``examine.py audit=darkness`` on two checkpoints (one file under two names), then ``advaudit.compare``."""
    root = copy_with_audit(tmp_path / "repo")
    for name in ("a", "b"):
        shutil.copy(tiny_fmnist_target, tmp_path / f"{name}.pt")
        done = run_python(root, ["examine.py", "audit=darkness", f"target={tmp_path / f'{name}.pt'}",
                                 "audit.n_items=100", "logger=none", f"hydra.run.dir={tmp_path / 'runs' / name}"],
                          timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads((tmp_path / "runs" / name / "result.json").read_text())
        assert 0 <= result["darkness/acc"] <= 1 and (tmp_path / "runs" / name / "per_instance.csv").exists()
    done = run_python(root, ["-m", "advaudit.compare", str(tmp_path / "runs"), "--out", str(tmp_path / "cmp")])
    assert done.returncode == 0, done.stderr[-3000:]
    [group] = json.loads((tmp_path / "cmp" / "comparison.json").read_text())["groups"]
    assert group["label"] == "darkness (dim)" and group["primary"] == "darkness/acc"
    assert [a["status"] for a in group["answers"]] == ["identical"]         # one model under two names


def test_no_module_of_compare_core_or_report_names_an_audit() -> None:
    """What the comparison, W&B and the reports know about an audit comes from its card, never from its name."""
    import ast

    from advaudit.audits.cards import audit_card, load_cards
    from advaudit.config.audit_card import CARDS

    load_cards()
    assert {"worst_case", "error_search", "fault_tests", "evaluate", "gallery"} <= set(CARDS)
    assert audit_card("worst_case").primary == "examine/E_T_valid" and audit_card("worst_case").method == "examiner.name"
    named = [f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}"
             for package in ("compare", "core", "report") for path in sorted((REPO / "advaudit" / package).rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CARDS]
    assert not named, named
    # nor do their docstrings and comments: an audit's name with an underscore is never an English word
    spelled = [f"{path.relative_to(REPO)}: {name}" for package in ("compare", "core", "report")
               for path in sorted((REPO / "advaudit" / package).rglob("*.py")) for name in CARDS
               if "_" in name and re.search(rf"\b{name}\b", path.read_text())]
    assert not spelled, spelled
