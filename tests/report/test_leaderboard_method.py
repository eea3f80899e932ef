"""The leaderboard labels each run with the method its audit's card names (not the first section it finds)."""

from __future__ import annotations

from advaudit.report.leaderboard import _method


def test_each_run_is_labelled_by_its_audits_method() -> None:
    # every examine config holds an examiner block (the default group), an error search's included
    examiner, search = {"name": "bo", "q": 4}, {"name": "gad", "gad": {}}
    assert _method({"audit": {"name": "worst_case"}, "examiner": examiner, "search": search}) == "bo"
    assert _method({"audit": {"name": "error_search"}, "examiner": examiner, "search": search}) == "gad"
    assert _method({"audit": {"name": "evaluate"}, "examiner": examiner}) is None      # no method to tell apart
    assert _method({"model": {"name": "cnn"}}) == "cnn"                                # a training run
