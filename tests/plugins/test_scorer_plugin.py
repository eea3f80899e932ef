"""A scorer defined only here plugs into the error-search audit as one class plus one YAML file.

The YAML goes to a config folder of the test's own, passed with ``--config-dir`` to the real
``examine.py`` (run as ``__main__`` by :mod:`tests.cli_batch`); ``+search/method=by_confidence`` adds
it, and it runs as the method reported first and beside another in ``audit.compare``. Nothing in
advaudit names the class.
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
from torch import Tensor

from advaudit.core.records import read_json, read_jsonl
from advaudit.errors import AdvauditError
from advaudit.search.methods import Scorer, build_method, is_scorer
from advaudit.search.scorers import ScoreInputs
from tests.conftest import REPO

SCORER_YAML = """\
# @package search.by_confidence
_target_: tests.plugins.test_scorer_plugin.ByConfidence
_partial_: true
power: 2.0
"""
ENV = {**os.environ, "WANDB_MODE": "disabled", "ADVAUDIT_PROGRESS": "0", "OMP_NUM_THREADS": "1",
       "HYDRA_FULL_ERROR": "", "ADVAUDIT_DEBUG": ""}


class ByConfidence:
    """Scores each eligible item by its calibrated confidence raised to ``power`` (> 0): the pools are
    then queried in the order ``low_confidence`` queries them, which the test checks."""

    def __init__(self, power: float) -> None:
        if power <= 0:
            raise AdvauditError(f"search.by_confidence.power={power} must be > 0")
        self.power = power

    def item_values(self, inputs: ScoreInputs, cache: Path) -> tuple[Tensor, dict[str, Any]]:
        """``[n]`` confidence ** power of the eligible items."""
        values = inputs.target.predict_proba(inputs.items).max(1).values.double() ** self.power
        return values, {"scored_items": len(values), "power": self.power}

    def pool_scores(self, values: Tensor, confidence: Tensor, pools: Tensor) -> Tensor:
        """``[R, P]`` each pool item's value."""
        return values[pools]


def run_examine(cases: dict[str, list[str]], tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Each case's ``examine.py`` arguments run as the CLI runs them: exit code, stdout, stderr."""
    batch = {name: {"script": "examine.py", "args": args} for name, args in cases.items()}
    (tmp_path / "cases.json").write_text(json.dumps(batch))
    done = subprocess.run([sys.executable, "-m", "tests.cli_batch", str(tmp_path / "cases.json"),
                           str(tmp_path / "results.json")], cwd=REPO, env={**ENV, "ADVAUDIT_ROOT": str(tmp_path)},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "results.json").read_text())


def test_a_scorer_defined_only_here_runs_as_primary_and_in_compare(biased_svm: Path, tmp_path: Path) -> None:
    config_dir = tmp_path / "my_conf"
    (config_dir / "search" / "method").mkdir(parents=True)
    (config_dir / "search" / "method" / "by_confidence.yaml").write_text(SCORER_YAML)
    common = ["--config-dir", str(config_dir), "experiment=error_search/table", f"target={biased_svm}",
              "logger=none", "threads=1", "audit.pool_size=60", "audit.replications=30", "audit.budget=15",
              "audit.report_at=[5,15]", "+search/method=by_confidence"]
    runs = {"primary": [*common, "search.name=by_confidence", "audit.compare=[low_confidence]"],
            "compare": [*common, "search=random", "audit.compare=[by_confidence,low_confidence]"],
            "misspelt": [*common, "search.name=by_confidence", "+search.by_confidence.powr=3"]}
    for name in runs:
        runs[name].append(f"hydra.run.dir={tmp_path / name}")
    results = run_examine(runs, tmp_path)
    for name in ("primary", "compare"):
        assert results[name]["code"] == 0, results[name]["stderr"][-3000:]
        result = read_json(tmp_path / name / "result.json")
        curves = {r["method"]: r for r in read_jsonl(tmp_path / name / "methods.jsonl")}
        # the plugged-in scorer ran with its YAML's setting and scored every eligible item
        assert result["search/by_confidence/power"] == 2.0
        assert result["search/by_confidence/scored_items"] == result["search/eligible"] > 15
        # confidence squared ranks as confidence does: the same items in the same order in every pool
        assert curves["by_confidence"]["first_pool_items"] == curves["low_confidence"]["first_pool_items"]
        assert curves["by_confidence"]["sdr_mean"] == curves["low_confidence"]["sdr_mean"]
        for k in (5, 15):
            assert result[f"search/by_confidence/sdr@{k}"] == curves["by_confidence"]["sdr_mean"][k - 1] > 0
            assert result[f"search/by_confidence/errors@{k}"] == curves["by_confidence"]["errors_mean"][k - 1]
    primary = read_json(tmp_path / "primary" / "result.json")
    assert primary["search/method"] == "by_confidence"
    assert primary["search/sdr@5"] == primary["search/by_confidence/sdr@5"]
    beside = read_json(tmp_path / "compare" / "result.json")
    assert beside["search/method"] == "random" and beside["search/sdr@5"] == beside["search/random/sdr@5"]
    assert set(curves) == {"random", "by_confidence", "low_confidence"}
    # a key the class does not take: exit code 2, one line naming it and the key it takes, nothing run
    misspelt = results["misspelt"]
    assert misspelt["code"] == 2, misspelt["stderr"][-3000:]
    lines = [line for line in (misspelt["stdout"] + misspelt["stderr"]).splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert "search.by_confidence has unknown keys ['powr']" in lines[0]
    assert "did you mean search.by_confidence.power for search.by_confidence.powr?" in lines[0]
    assert not (tmp_path / "misspelt" / "methods.jsonl").exists()


def test_building_the_plugged_in_scorer_refuses_a_key_it_does_not_take() -> None:
    search = {"name": "by_confidence", "by_confidence": {"_target_": "tests.plugins.test_scorer_plugin.ByConfidence",
                                                         "_partial_": True, "power": 2.0}}
    scorer = build_method(search, "by_confidence")()
    assert isinstance(scorer, Scorer) and scorer.power == 2.0
    values = torch.tensor([0.9, 0.7, 0.8], dtype=torch.float64)
    assert scorer.pool_scores(values, values, torch.tensor([[2, 0], [1, 2]])).tolist() == [[0.8, 0.9], [0.7, 0.8]]
    search["by_confidence"]["powr"] = 3
    with pytest.raises(AdvauditError, match=r"^search.by_confidence has unknown keys \['powr'\] .*did you mean "
                                            r"search.by_confidence.power for search.by_confidence.powr\? "
                                            r"\(tests.plugins.test_scorer_plugin.ByConfidence takes these settings\)$"):
        build_method(search, "by_confidence")
    neither = {"name": "x", "x": {"_target_": "pathlib.PurePosixPath", "_partial_": True}}
    with pytest.raises(AdvauditError, match=r"^search.x builds a PurePosixPath, which is neither a scorer"):
        is_scorer(build_method(neither, "x")(), "x")
    assert is_scorer(scorer, "by_confidence")
    search["by_confidence"] = {**search["by_confidence"], "_target_": "tests.plugins.no_such_module.Scorer"}
    with pytest.raises(AdvauditError, match=r"^search.by_confidence._target_=tests.plugins.no_such_module.Scorer "
                                            r"cannot be imported"):
        build_method(search, "by_confidence")
