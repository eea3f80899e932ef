"""Audits split over jobs: shards only examine (or score), the merge writes the one report from their records, equal
to one job's in every key but the timings, and an unfinished or missing shard is named with its command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

from advaudit.audits.merging import merge_shards
from advaudit.audits.shards import SHARD_FILE, read_shards
from advaudit.audits.worst_case_fresh import join_fresh_conditions
from advaudit.core.records import read_json, read_jsonl, to_plain, write_json
from advaudit.errors import AdvauditError
from tests.conftest import compose_config, worst_case_overrides

#: what may differ between one job and its merged shards: timings and where the files are
TIMINGS_AND_PATHS = ("seconds", "seconds_examination", "queries_per_second", "plots", "report", "config",
                     "merged_from")


def _numbers(result: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in result.items() if k not in TIMINGS_AND_PATHS and not k.endswith(("/seconds",
                                                                                                "/attack_seconds"))}
    return json.loads(json.dumps(to_plain(kept)))


def test_the_shards_fresh_records_join_into_the_whole_examinations() -> None:
    n, k = 7, 3
    whole = {"gallery": torch.rand(n, 1, 4, 4), "random_free": torch.rand(n, k, 2), "random_s": torch.rand(n, k, 5),
             "random_valid": torch.rand(n * k) > 0.5, "random_ok": torch.rand(n * k) > 0.5,
             "random_true_prob": torch.rand(n * k), "judge_worst": torch.rand(n) > 0.5, "judge_random": torch.rand(n * k) > 0.5}
    rows = [torch.arange(s, n, 3) for s in range(3)]
    conditions = [(r[:, None] * k + torch.arange(k)).reshape(-1) for r in rows]
    parts = [{key: value[c if value.shape[0] == n * k else r] for key, value in whole.items()}
             for r, c in zip(rows, conditions)]
    joined = join_fresh_conditions(parts, rows)
    assert set(joined) == set(whole) and all(torch.equal(joined[key], whole[key]) for key in whole)


#: the worst-case keys of the label-keeping set: E_T inside S, T = 0 and the movement from it, and per instance the
#: accuracy under the random conditions (a merge that dropped or mis-joined one of them must fail, not pass as
#: "equal" because neither run has it)
MOVEMENT_KEYS = ("examine/E_T_valid", "examine/E_T_valid_random", "examine/E_T_valid_moved",
                 "examine/E_T_valid_moved/lo", "examine/E_T_valid_moved/hi", "examine/E_T_valid_moved/p",
                 "examine/E_T_moved", "examine/E_T_moved/p", "examiner_moved", "examiner_moved_words")
PER_INSTANCE_KEYS = ("E_T_valid", "E_T_valid_random", "random_accuracy", "random_valid_accuracy")


def assert_same_examination(merged: dict[str, Any], whole: dict[str, Any]) -> None:
    """``merged`` (the shards' merge) equals ``whole`` (one job) in every key but timings, E_T inside S and the
    movement from T = 0 included."""
    assert _numbers(merged) == _numbers(whole)
    budgets = [b["queries"] for b in whole["budgets"]]
    for key in (*MOVEMENT_KEYS, *(f"examine/E_T_valid@{b}" for b in budgets)):
        assert key in merged and merged[key] == whole[key], key
    assert merged["examine/E_T_valid"] is not None and isinstance(merged["examiner_moved_words"], str)
    for row, one in zip(merged["per_instance"], whole["per_instance"]):
        assert all(key in row and row[key] == one[key] for key in PER_INSTANCE_KEYS), row["instance"]
    accuracies = [row["random_accuracy"] for row in merged["per_instance"]]
    assert all(0 <= a <= 1 for a in accuracies) and len(set(accuracies)) > 1  # per instance, not one copied value


def _shard(path: Path, shard: int, shards: int, finished: bool, command: str | None) -> Path:
    path.mkdir(parents=True)
    write_json(path / SHARD_FILE, {"audit": "worst_case", "shard": shard, "shards": shards, "key": "abc",
                                   "finished": finished, "command": command})
    write_json(path / "result.json", {"status": "ok" if finished else "failed", "error": None if finished else "boom"})
    return path


def test_the_merge_names_an_unfinished_shard_and_the_command_that_finishes_it(tmp_path: Path) -> None:
    def command(k: int) -> str:
        return f"python examine.py audit.shards=3 audit.shard={k} target=t.pt hydra.run.dir={tmp_path / str(k)}"

    done = [_shard(tmp_path / str(k), k, 3, True, command(k)) for k in (0, 1)]
    unfinished = _shard(tmp_path / "2", 2, 3, False, command(2))
    with pytest.raises(AdvauditError, match=f"shard 2 of 3 in {unfinished} did not finish \\(boom\\); "
                                            f"finish it with: {command(2)}"):
        read_shards([*done, unfinished])
    # a shard that never started: the command of one that did, for it, into the job dir Hydra made for it
    (unfinished / SHARD_FILE).unlink()
    (unfinished / ".hydra").mkdir()
    OmegaConf.save(OmegaConf.create(["audit.shards=3", "audit.shard=2", "target=t.pt"]),
                   unfinished / ".hydra" / "overrides.yaml")
    with pytest.raises(AdvauditError) as error:
        read_shards(done)
    assert f"shard 2 is missing: run it with {command(2)}" in str(error.value)


def _merge_without_a_target(dirs: list[Path], out: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Merge worst-case shards while loading a target, selecting instances or building a world fails."""
    import advaudit.audits.worst_case as worst_case

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the merge loaded the target, built the world or selected instances")

    with monkeypatch.context() as patch:
        for name in ("load_audit_target", "select_instances", "build_world"):
            patch.setattr(worst_case, name, refuse)
        return merge_shards(dirs, out)


@pytest.mark.slow
def test_two_bo_shards_merge_to_one_job_without_loading_the_target(tiny_shapes_target: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from advaudit.tasks import examine

    overrides = worst_case_overrides(tiny_shapes_target, "examiner=bo_batch", "examiner.fit=per_instance",
                                     "examiner.q=4", "examiner.fit_maxiter=5", "examiner.raw_samples=32",
                                     f"audit.judge={tiny_shapes_target}")
    whole = examine(compose_config("examine", [*overrides, f"paths.output_dir={tmp_path / 'whole'}"], tmp_path))
    dirs = [tmp_path / f"shard{k}" for k in (0, 1)]
    for k, run_dir in enumerate(dirs):
        part = examine(compose_config("examine", [*overrides, "audit.shards=2", f"audit.shard={k}",
                                                  f"paths.output_dir={run_dir}"], tmp_path))
        assert "report" not in part and not (run_dir / "report.md").exists()  # a shard only examines
        assert read_json(run_dir / SHARD_FILE)["finished"]
    merged = _merge_without_a_target(dirs, tmp_path / "merged", monkeypatch)
    assert_same_examination(merged, read_json(tmp_path / "whole" / "result.json"))
    assert merged["examine/E_T"] == whole["examine/E_T"] and merged["n_instances"] == whole["n_instances"]
    assert (tmp_path / "merged" / "steps.jsonl").read_text() == (tmp_path / "whole" / "steps.jsonl").read_text()
    for png in ("worst_cases.png", "tsne.png", "true_prob_vs_queries.png"):
        assert (tmp_path / "merged" / png).is_file()
    with pytest.raises(AdvauditError, match="pass every shard"):
        merge_shards(dirs[:1], tmp_path / "half")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["random", "rl"])
def test_two_shards_merge_to_the_unsharded_examination(tiny_shapes_target: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from advaudit.tasks import examine

    overrides = worst_case_overrides(tiny_shapes_target, f"examiner={name}", "audit.budget=16",
                                     "audit.report_budgets=[0,8,16]")
    examine(compose_config("examine", [*overrides, f"paths.output_dir={tmp_path / 'whole'}"], tmp_path))
    whole = read_json(tmp_path / "whole" / "result.json")
    dirs = [tmp_path / f"shard{k}" for k in (1, 0)]
    for run_dir in dirs:
        part = examine(compose_config("examine", [*overrides, "audit.shards=2", f"audit.shard={run_dir.name[-1]}",
                                                  f"paths.output_dir={run_dir}"], tmp_path))
        assert part["n_instances"] == 5
    merged = _merge_without_a_target(dirs, tmp_path / "merged", monkeypatch)
    assert_same_examination(merged, whole)
    assert read_jsonl(tmp_path / "merged" / "steps.jsonl") == read_jsonl(tmp_path / "whole" / "steps.jsonl")
    fresh = [torch.load(tmp_path / run / "fresh_conditions.pt", weights_only=True) for run in ("merged", "whole")]
    assert set(fresh[0]) == set(fresh[1]) and all(torch.equal(fresh[0][k], fresh[1][k]) for k in fresh[1])
    with pytest.raises(AdvauditError, match="pass every shard"):
        merge_shards(dirs[:1], tmp_path / "half")


def _search_overrides(target: Path, *extra: str) -> list[str]:
    return [f"target={target}", "experiment=error_search/table", "logger=none", "audit.pool_size=60",
            "audit.replications=30", "audit.budget=15", "audit.report_at=[5,15]", "audit.compare=[random,lakkaraju,"
            "adversarial_distance]", "search.gad.pseudo_model.design_size=5000", "search.gad.pseudo_model.epochs=10",
            "search.gad.attack.max_steps=200", "search.gad.attack.chunk=20", "search.adversarial_distance.attack.chunk=16",
            "search.adversarial_distance.attack.steps=4", *extra]


@pytest.mark.slow
def test_two_error_search_shards_merge_to_one_job(biased_svm: Path, tmp_path: Path) -> None:
    from advaudit.tasks import examine

    overrides = _search_overrides(biased_svm, "audit.pool_chunk=8")  # 4 chunks of pools: 2 per shard
    whole = examine(compose_config("examine", [*overrides, f"paths.output_dir={tmp_path / 'whole'}"], tmp_path))
    dirs = [tmp_path / f"shard{k}" for k in (1, 0)]
    for run_dir in dirs:
        part = examine(compose_config("examine", [*overrides, "audit.shards=2", f"audit.shard={run_dir.name[-1]}",
                                                  f"paths.output_dir={run_dir}"], tmp_path))
        assert part["search/gad/chunks"] >= 2 and not (run_dir / "methods.jsonl").exists()  # only the scoring
        scored = {r["item"] for r in read_jsonl(run_dir / "scores" / "adversarial_distance.jsonl")}
        assert 0 < len(scored) < whole["search/eligible"]
        shard = int(run_dir.name[-1])  # the policies ran on the shard's chunks of pools, the scorers in the merge
        for policy in ("random", "lakkaraju"):
            assert [r["start"] for r in read_jsonl(run_dir / "queries" / f"{policy}.jsonl")] == [8 * shard, 8 * shard + 16]
        assert not (run_dir / "queries" / "gad.jsonl").exists()
    merged = merge_shards(dirs, tmp_path / "merged")
    assert _numbers(merged) == _numbers(read_json(tmp_path / "whole" / "result.json"))
    curves = [[_numbers(r) for r in read_jsonl(tmp_path / run / "methods.jsonl")] for run in ("merged", "whole")]
    assert curves[0] == curves[1] and merged["search/sdr@15"] == whole["search/sdr@15"]
    with pytest.raises(AdvauditError, match="audit.shards=2 with oracle=cli"):
        examine(compose_config("examine", [*overrides, "audit.shards=2", "oracle=cli",
                                           f"paths.output_dir={tmp_path / 'cli'}"], tmp_path))
