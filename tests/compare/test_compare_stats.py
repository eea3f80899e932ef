"""Known answers for the comparison: verdicts, intervals over seeds, McNemar, Holm, grouping, factors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advaudit.compare import compare_runs
from advaudit.compare.__main__ import main as compare_main
from tests.compare.fixtures import write_failed, write_worst_case


def _group(summary: dict, label_start: str = "worst_case") -> dict:
    return next(g for g in summary["groups"] if g["label"].startswith(label_start))


def _pair(group: dict, metric: str) -> dict:
    return next(r for r in group["pairs"] if r["metric"] == metric)


def test_clearly_weaker_checkpoint_is_named_worse_and_equal_ones_are_not(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.7, 30)
    no_fail = np.zeros(30, bool)
    write_worst_case(tmp_path / "weak", "ckpt/weak/target.pt", 0, base - 0.2 + rng.normal(0, 0.02, 30), no_fail)
    write_worst_case(tmp_path / "strong", "ckpt/strong/target.pt", 0, base, no_fail)
    write_worst_case(tmp_path / "twin", "ckpt/twin/target.pt", 0, base + rng.normal(0, 0.02, 30), no_fail)
    summary = compare_runs([tmp_path], tmp_path / "out", replay=False)
    group = _group(summary)
    weak_strong = next(r for r in group["pairs"] if r["metric"] == "examine/worst"
                       and {r["a"], r["b"]} == {"ckpt/weak/target.pt", "ckpt/strong/target.pt"})
    assert weak_strong["test"] == "Wilcoxon signed-rank" and weak_strong["p_holm"] < 0.001
    sign = 1 if weak_strong["a"] == "ckpt/weak/target.pt" else -1
    assert sign * weak_strong["hi"] < 0 and abs(weak_strong["diff"] + sign * 0.2) < 0.02
    assert weak_strong["verdict"].startswith("weak/target is worse than strong/target")
    twin = next(r for r in group["pairs"] if r["metric"] == "examine/worst"
                and {r["a"], r["b"]} == {"ckpt/twin/target.pt", "ckpt/strong/target.pt"})
    assert twin["p_holm"] > 0.05 and twin["verdict"].startswith("No difference")
    assert twin["lo"] < 0 < twin["hi"]
    # two Holm families: the primary question over its 3 pairs, the evidence over the rest (3 pairs x every
    # other metric with a p-value); each never lowers a p-value and multiplies its smallest by its size
    rows = [r for r in group["pairs"] if np.isfinite(r["p"])]
    for family in ("primary", "evidence"):
        members = [r for r in rows if r["family"] == family]
        assert len(members) == (3 if family == "primary" else len(rows) - 3) and len(members) >= 3
        smallest = min(members, key=lambda r: r["p"])
        assert smallest["p_holm"] == pytest.approx(min(1.0, len(members) * smallest["p"]))
        assert all(r["family_size"] == len(members) and r["p_holm"] >= r["p"] for r in members)
    assert all(r["p_holm"] >= r["p"] for r in rows)
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert text.splitlines()[2].startswith("## Answer") and "Paired differences" in text
    assert "**weak/target is weaker than strong/target on E_T" in text
    assert (tmp_path / "out" / "forest_worst_case_random.png").stat().st_size > 1000
    assert (tmp_path / "out" / "pairs.csv").exists() and (tmp_path / "out" / "per_class.csv").exists()


def test_seed_level_interval_and_mcnemar_exact(tmp_path: Path) -> None:
    n = 20
    for seed, shift in enumerate([0.0, 0.1, 0.2]):
        a_fail = np.zeros(n, bool)
        a_fail[:12] = True                     # A fails on 12 instances, B on the first 2 of them
        b_fail = np.zeros(n, bool)
        b_fail[:2] = True
        write_worst_case(tmp_path / f"a{seed}", "A.pt", seed, np.full(n, 0.2 + shift), a_fail)
        write_worst_case(tmp_path / f"b{seed}", "B.pt", seed, np.full(n, 0.5 + shift), b_fail)
    group = _group(compare_runs([tmp_path], tmp_path / "out", replay=False))
    summary_a = next(r for r in group["checkpoints"] if r["target"] == "A.pt" and r["metric"] == "examine/worst")
    assert summary_a["interval_over"] == "seeds" and summary_a["n_seeds"] == 3
    assert summary_a["mean"] == pytest.approx(0.3)
    assert 0.2 - 1e-9 <= summary_a["lo"] < 0.3 < summary_a["hi"] <= 0.4 + 1e-9
    failure = _pair(group, "examine/failure_rate")
    # 10 discordant instances per seed, all on A's side: exact McNemar p = 2 * 0.5^30
    assert failure["test"] == "McNemar" and (failure["only_a"], failure["only_b"]) == (30, 0)
    assert failure["p"] < 1e-6
    assert failure["verdict"].startswith("A is worse than B")


def test_mcnemar_exact_known_answer(tmp_path: Path) -> None:
    n = 16
    a_fail, b_fail = np.zeros(n, bool), np.zeros(n, bool)
    a_fail[:5] = True                          # 5 discordant pairs, all A: exact p = 2 * 0.5^5 = 0.0625
    write_worst_case(tmp_path / "a", "A.pt", 0, np.full(n, 0.3), a_fail)
    write_worst_case(tmp_path / "b", "B.pt", 0, np.full(n, 0.3), b_fail)
    failure = _pair(_group(compare_runs([tmp_path], tmp_path / "out", replay=False)), "examine/failure_rate")
    assert failure["test"] == "McNemar (exact)" and failure["p"] == pytest.approx(0.0625)
    assert failure["verdict"].startswith("No difference")


def test_runs_that_differ_in_design_are_kept_apart_and_failures_listed(tmp_path: Path) -> None:
    worst, fail = np.full(8, 0.4), np.zeros(8, bool)
    write_worst_case(tmp_path / "m" / "0", "A.pt", 0, worst, fail)
    write_worst_case(tmp_path / "m" / "1", "B.pt", 0, worst, fail, budget=128)
    write_worst_case(tmp_path / "m" / "2", "A.pt", 0, worst, fail, examiner="bo")
    write_failed(tmp_path / "m" / "3", "missing.pt", 0, "checkpoint missing.pt does not exist")
    job = tmp_path / "m" / "4" / ".hydra"          # a job killed before writing result.json
    job.mkdir(parents=True)
    (job / "overrides.yaml").write_text("- target=killed.pt\n")
    (job / "config.yaml").write_text("target: killed.pt\nseed: 0\n")
    (tmp_path / "m" / "multirun.yaml").write_text("{}\n")
    summary = compare_runs([tmp_path / "m"], tmp_path / "out", replay=False)
    assert len(summary["groups"]) == 3 and all(not g["pairs"] for g in summary["groups"])
    differs = summary["kept_apart"][0]["differs_in"]
    assert set(differs) == {"audit.budget", "examiner.name"}
    failed = {Path(f["run_dir"]).name: f for f in summary["failed"]}
    assert failed["3"]["error_kind"] == "user" and "does not exist" in failed["3"]["error"]
    assert "no result.json" in failed["4"]["error"]
    text = (tmp_path / "out" / "comparison.md").read_text()
    assert "Failed runs" in text and "`audit.budget`: `64` | `128`" in text


def test_different_instances_are_paired_on_the_shared_ones(tmp_path: Path) -> None:
    worst, fail = np.linspace(0.1, 0.9, 10), np.zeros(10, bool)
    write_worst_case(tmp_path / "a", "A.pt", 0, worst, fail, instances=list(range(10)))
    write_worst_case(tmp_path / "b", "B.pt", 0, worst, fail, instances=list(range(5, 15)))
    group = _group(compare_runs([tmp_path], tmp_path / "out", replay=False))
    assert any("different instances" in n and "5 instances they share" in n for n in group["notes"])
    assert _pair(group, "examine/worst")["n_instances"] == 5


def test_worst_conditions_bunched_at_one_end_of_a_factor_are_found(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 40
    conditions = [{"camera_elevation": float(rng.uniform(60, 90)), "camera_roll": float(rng.uniform(0, 360))}
                  for _ in range(n)]
    write_worst_case(tmp_path / "a", "A.pt", 0, np.full(n, 0.3), np.zeros(n, bool), worst_s=conditions)
    group = _group(compare_runs([tmp_path], tmp_path / "out", replay=False))
    by_factor = {r["factor"]: r for r in group["per_factor"]}
    assert by_factor["camera_elevation"]["share_high"] == 1.0 and by_factor["camera_elevation"]["p"] < 1e-6
    assert by_factor["camera_roll"]["p"] > 0.01 and by_factor["camera_roll"]["test"] == "Kuiper"
    assert (tmp_path / "out" / "factors_worst_case_random.png").exists()


def test_cli_writes_report_and_names_bad_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert compare_main([str(tmp_path / "nothing-here")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "run_a.log").write_text("a run's log, matched by run_*\n")
    assert compare_main([str(tmp_path / "run_a.log")]) == 2
    assert "run_a.log is neither a folder nor a result.json" in capsys.readouterr().err
    write_worst_case(tmp_path / "r" / "a", "A.pt", 0, np.full(6, 0.3), np.zeros(6, bool))
    write_worst_case(tmp_path / "r" / "b", "B.pt", 0, np.full(6, 0.6), np.zeros(6, bool))
    assert compare_main([str(tmp_path / "r"), "--no-replay"]) == 0
    data = json.loads((tmp_path / "r" / "comparison" / "comparison.json").read_text())
    assert data["groups"][0]["targets"] == {"A.pt": "A", "B.pt": "B"}


def test_audits_without_per_instance_records_are_compared_over_seeds(tmp_path: Path) -> None:
    from advaudit.core.records import write_json

    for seed, (a, b) in enumerate([(0.9, 0.5), (0.8, 0.4), (0.85, 0.45)]):
        for name, success in (("A.pt", a), ("B.pt", b)):
            config = {"target": name, "seed": seed, "generator": "g.pt",
                      "audit": {"name": "fault_tests", "eps": 4.0, "k": 2}}
            write_json(tmp_path / f"{name}{seed}" / "result.json",
                       {"status": "ok", "audit": "fault_tests", "target": name, "faults/generator/success": success,
                        "faults/generator/transfer_acc/other": 0.3, "config": config})
    [group] = compare_runs([tmp_path], tmp_path / "out", replay=False)["groups"]
    assert group["metrics"] == ["faults/generator/success", "faults/generator/transfer_acc/other"]
    success_a = next(r for r in group["checkpoints"] if r["target"] == "A.pt" and r["metric"].endswith("success"))
    assert success_a["mean"] == pytest.approx(0.85) and success_a["interval_over"] == "seeds"
    pair = _pair(group, "faults/generator/success")
    assert pair["diff"] == pytest.approx(0.4) and pair["units"] == "seeds" and "6 seeds" in pair["note"]
    assert pair["p"] == pytest.approx(0.25)     # exact Wilcoxon, 3 positive differences: 2 / 2^3
