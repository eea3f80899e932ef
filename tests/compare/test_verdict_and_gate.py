"""One answer per comparison: primary verdict, floors, identical scores, the CI gate and the HTML page."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from advaudit.compare import compare_runs
from advaudit.compare.metrics import Metric
from advaudit.compare.verdict import bound_of, no_test_words, secondary_sentence
from tests.compare.fixtures import write_worst_case

ROOT = Path(__file__).resolve().parents[2]
N = 30


def _answer(summary: dict, a: str, b: str) -> dict:
    group = summary["groups"][0]
    return next(x for x in group["answers"] if {x["a"], x["b"]} == {a, b})


def test_floor_gives_no_verdict_and_identical_scores_get_no_power_advice(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    # both worst cases at the floor (~0.00 to 0.01), one a little lower on every instance: a Wilcoxon
    # test finds it (p << 0.05), but the metric has nothing left to separate them with
    low = rng.uniform(0.0, 0.005, N)
    write_worst_case(tmp_path / "plain", "plain.pt", 0, low, np.ones(N, bool))
    write_worst_case(tmp_path / "rot", "rot.pt", 0, low + 0.004, np.ones(N, bool))
    # the ONNX export of plain: the same scores up to float noise
    write_worst_case(tmp_path / "onnx", "onnx.pt", 0, low + rng.normal(0, 5e-9, N), np.ones(N, bool))
    summary = compare_runs([tmp_path], tmp_path / "out", replay=False, primary="examine/worst")
    floor = _answer(summary, "plain.pt", "rot.pt")
    worst_row = next(r for r in summary["groups"][0]["pairs"] if r["metric"] == "examine/worst"
                     and {r["a"], r["b"]} == {"plain.pt", "rot.pt"})
    assert worst_row["p_holm"] < 0.05                                   # the test alone would call it
    assert floor["status"] == "floor" and floor["weaker"] is None
    assert "at the floor, 0.00" in floor["text"] and "cannot separate them" in floor["text"]
    assert "Power" not in floor["text"]
    failed = next(s for s in floor["secondary"] if s["metric"] == "examine/failure_rate")
    assert failed["relation"] == "ceiling"                             # every instance failed for both
    twin = _answer(summary, "plain.pt", "onnx.pt")
    assert twin["status"] == "identical" and "score identically" in twin["text"] and "Power" not in twin["text"]
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "plain and onnx score identically" in text or "onnx and plain score identically" in text


def _blind(path: Path, blind: set[int]) -> None:
    """Mark instances ``blind`` of a written run as having no valid view (no worst valid case, as the audit writes)."""
    import json
    result = json.loads(path.read_text())
    for row in result["per_instance"]:
        if row["instance"] in blind:
            row["worst"] = None
    path.write_text(json.dumps(result))


def test_a_failure_rate_that_only_counts_judged_instances_is_said_as_such(tmp_path: Path) -> None:
    # catches: "identical" (or a verdict) for a failure rate that is the share of instances with a valid view:
    # both checkpoints fail exactly where the check could judge, whatever their weakness
    rng = np.random.default_rng(2)
    blind = {3, 7, 11, 19}
    judged = np.array([i not in blind for i in range(N)])
    for name, shift in (("plain.pt", 0.0), ("rot.pt", 0.15)):
        path = write_worst_case(tmp_path / name, name, 0, rng.uniform(0.05, 0.3, N) + shift, judged)
        _blind(path, blind)
    answer = _answer(compare_runs([tmp_path], tmp_path / "out", replay=False), "plain.pt", "rot.pt")
    failed = next(s for s in answer["secondary"] if s["metric"] == "examine/failure_rate")
    assert failed["relation"] == "judged" and "every instance with a valid view failed" in failed["text"]
    # one instance with a valid view that did not fail: the failure rate measures something again
    path = write_worst_case(tmp_path / "plain.pt", "plain.pt", 0, rng.uniform(0.05, 0.3, N), judged & (np.arange(N) != 0))
    _blind(path, blind)
    answer = _answer(compare_runs([tmp_path], tmp_path / "out2", replay=False), "plain.pt", "rot.pt")
    assert next(s for s in answer["secondary"] if s["metric"] == "examine/failure_rate")["relation"] != "judged"


def test_bounds_in_words_of_the_metric() -> None:
    probability = Metric("examine/E_T", True, "E_T")
    assert bound_of(probability, (0.004, 0.015)) == "floor"
    assert bound_of(probability, (0.004, 0.2)) is None
    assert bound_of(probability, (0.99, 1.0)) == "ceiling"
    assert bound_of(Metric("search/sdr@20", False, high=None), (3.0, 3.5)) is None


def test_a_secondary_metric_against_the_primary_is_a_conflict_not_a_headline(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    base = rng.uniform(0.3, 0.6, N)
    # A's final proposals (E_T = worst + 0.1) are lower, but B fails on more instances
    a_fail, b_fail = np.zeros(N, bool), np.zeros(N, bool)
    b_fail[:20] = True
    write_worst_case(tmp_path / "a", "A.pt", 0, base - 0.1 + rng.normal(0, 0.01, N), a_fail)
    write_worst_case(tmp_path / "b", "B.pt", 0, base, b_fail)
    summary = compare_runs([tmp_path], tmp_path / "out", replay=False)
    answer = _answer(summary, "A.pt", "B.pt")
    assert summary["groups"][0]["primary"] == "examine/E_T"
    assert answer["weaker"] == "A.pt" and answer["text"].startswith("A is weaker than B on E_T")
    relations = {s["metric"]: s["relation"] for s in answer["secondary"]}
    assert relations["examine/worst"] == "supports" and relations["examine/failure_rate"] == "conflicts"
    head = (tmp_path / "out" / "comparison.md").read_text().split("successful runs")[0]
    assert head.count("**") == 2                                      # one headline per pair, in bold


def test_evidence_without_a_verdict_of_its_own_is_written_in_the_primary_verdicts_order() -> None:
    """The primary says "B − A = -0.08": evidence that names nobody follows that order, not the pair's table order."""
    row = {"a": "A", "b": "B", "diff": 0.084, "lo": 0.033, "hi": 0.135, "p": 0.017, "p_holm": 0.085,
           "test": "Welch t over files", "family": "evidence", "family_size": 5}
    metric, names = Metric("examine/E_T", True, "E_T"), {"A": "A", "B": "B"}
    relation, text = secondary_sentence(row, metric, names, {"A": 0.3, "B": 0.2}, {"status": "none", "weaker": None},
                                        "B", 5)
    assert relation == "none" and "(B − A = -0.084 [-0.135, -0.033]; Welch t over files p = 0.017" in text
    lower = row | {"diff": -0.084, "lo": -0.135, "hi": -0.033, "p_holm": 0.02}
    relation, text = secondary_sentence(lower, metric, names, {"A": 0.2, "B": 0.3}, {"status": "weaker", "weaker": "A"},
                                        "B", 5)
    assert relation == "conflicts" and "A weaker (A − B = -0.084" in text    # its own weaker checkpoint first


def test_recipes_whose_files_do_not_spread_are_said_untested_for_that_reason() -> None:
    files = no_test_words({"units": "files", "n_files": [3, 3], "n_seeds": 1, "p": float("nan")})
    assert files.startswith("not tested: Welch's test over the files (3 and 3) has no spread") and "seeds" not in files
    assert "at least 6 seeds" in no_test_words({"units": "seeds", "n_seeds": 2, "p": float("nan")})


def _pair_records(root: Path, weaker_by: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.7, N)
    write_worst_case(root / "base", "ckpt/baseline/target.pt", 0, base, np.zeros(N, bool))
    write_worst_case(root / "cand", "ckpt/candidate/target.pt", 0, base - weaker_by + rng.normal(0, 0.03, N),
                     np.zeros(N, bool))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advaudit.compare", *args, "--no-replay"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(ROOT),
                                                                            "OMP_NUM_THREADS": "1", "PATH": "/usr/bin"})


@pytest.mark.slow
def test_gate_cli_fails_a_weaker_candidate_passes_a_control_and_writes_junit(tmp_path: Path) -> None:
    _pair_records(tmp_path / "weaker", 0.1, 3)
    done = _cli(str(tmp_path / "weaker"), "--gate", "baseline/target")
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith("gate failed"))
    assert "candidate/target is weaker than baseline/target on examine/E_T" in line and "Holm-corrected p" in line
    suite = ET.parse(tmp_path / "weaker" / "comparison" / "gate.xml").getroot()
    assert suite.tag == "testsuite" and suite.get("tests") == "1" and suite.get("failures") == "1"
    assert suite.find("testcase/failure") is not None
    # the same loss inside a generous margin passes
    assert _cli(str(tmp_path / "weaker"), "--gate", "baseline/target", "--margin", "0.2").returncode == 0
    _pair_records(tmp_path / "control", 0.0, 4)                       # two scorings of one recipe
    done = _cli(str(tmp_path / "control"), "--gate", "baseline/target")
    assert done.returncode == 0, done.stdout + done.stderr
    suite = ET.parse(tmp_path / "control" / "comparison" / "gate.xml").getroot()
    assert suite.get("failures") == "0" and len(suite.findall("testcase")) == 1
    bad = _cli(str(tmp_path / "control"), "--gate", "nosuch")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1 and "baseline/target" in bad.stderr and "candidate/target" in bad.stderr


def test_html_page_is_self_contained_with_the_verdict_first(tmp_path: Path) -> None:
    _pair_records(tmp_path, 0.1, 5)
    summary = compare_runs([tmp_path], tmp_path / "out", replay=False)
    page = Path(summary["files"]["html"]).read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)   # loads nothing from a network
    assert page.count('src="data:image/png;base64,') == len(summary["groups"][0]["plots"]) >= 2
    assert page.index("candidate/target is weaker than baseline/target") < page.index("<table>")


def test_sweep_callback_gates_the_multirun(tmp_path: Path) -> None:
    from advaudit.sweep.callbacks import SweepEnd
    from omegaconf import OmegaConf

    _pair_records(tmp_path / "sweep", 0.1, 6)
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "sweep")}}, "task_name": "examine"})
    with pytest.raises(SystemExit) as ended:
        SweepEnd(compare=True, replay=False, fail_on_error=True, wandb=False, gate="baseline/target", margin=0.0).on_multirun_end(config)
    assert ended.value.code == 1
    suite = ET.parse(tmp_path / "sweep" / "comparison" / "gate.xml").getroot()
    assert suite.get("failures") == "1"
    SweepEnd(compare=True, replay=False, fail_on_error=True, wandb=False, gate="baseline/target", margin=0.5).on_multirun_end(config)  # passes


@pytest.mark.slow
def test_wandb_gets_the_answer_table_and_the_page(tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    from advaudit.compare.render.wandb import log_comparison
    from advaudit.report.wandb_offline import offline_runs

    _pair_records(tmp_path / "runs", 0.1, 7)
    summary = compare_runs([tmp_path / "runs"], tmp_path / "out", replay=False)
    config = {"logger": {"wandb": {"mode": "offline", "project": "advaudit-test"}}, "task_name": "examine"}
    log_comparison(summary, tmp_path / "out", OmegaConf.create(config))
    [run] = offline_runs(tmp_path / "out")
    tables = [f for a in run["artifacts"] for f in a["files"]]
    assert "compare/worst_case_random/answer.table.json" in tables
    assert list((tmp_path / "out").rglob("media/html/compare/report_*.html"))


@pytest.mark.slow
@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "chromium-browser")), reason="no headless chromium")
def test_html_page_renders_offline_in_a_headless_browser(tmp_path: Path) -> None:
    import matplotlib.image

    _pair_records(tmp_path, 0.1, 8)
    page = Path(compare_runs([tmp_path], tmp_path / "out", replay=False)["files"]["html"])
    shot = tmp_path / "shot.png"
    browser = next(b for b in ("chromium", "chromium-browser") if shutil.which(b))
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
                    f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    pixels = matplotlib.image.imread(shot)                     # [H, W, 4] in [0, 1]
    assert pixels.shape[:2] == (2400, 1200)
    dark = (pixels[..., :3].mean(-1) < 0.5).mean(0)            # share of dark pixels per column
    assert dark.max() > 0.01 and (pixels[..., :3].std() > 0.05)  # text and figures, not a blank page


def test_a_gate_with_nothing_to_compare_is_bad_input(tmp_path: Path) -> None:
    from advaudit.compare.gate import gate
    from advaudit.errors import AdvauditError

    rng = np.random.default_rng(9)
    write_worst_case(tmp_path / "base", "ckpt/baseline/target.pt", 0, rng.uniform(0.3, 0.7, N), np.zeros(N, bool))
    summary = compare_runs([tmp_path], tmp_path / "out", replay=False)
    with pytest.raises(AdvauditError, match="nothing was gated"):
        gate(summary, "baseline/target")
    with pytest.raises(AdvauditError, match="margin"):
        gate(summary, "baseline/target", margin=-1)
