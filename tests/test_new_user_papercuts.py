"""What a new user tripped on following the docs, each pinned: the line or behaviour it gives now."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

import advaudit
from advaudit.confutil import locate
from advaudit.errors import AdvauditError, clipped
from advaudit.models.targets.classes import align_target
from advaudit.models.targets.imported.spec import parse_target_spec
from tests.models.test_imported_targets import FMNIST_NAMES

REPO = Path(__file__).resolve().parents[1]


def brightness_block(**keys: Any) -> dict[str, Any]:
    return {"function": "tests.models.user_models.brightness_votes", "class_names": FMNIST_NAMES,
            "input_shape": [1, 28, 28], "normalization": "model", "array": "numpy", **keys}


def test_outputs_reordered_by_class_name_are_said_on_the_terminal(caplog: pytest.LogCaptureFixture) -> None:
    target = advaudit.load_target(brightness_block(class_names=list(reversed(FMNIST_NAMES))))
    with caplog.at_level(logging.INFO, logger="advaudit"):
        align_target(target, FMNIST_NAMES, "audit.dataset")
    said = [r.getMessage() for r in caplog.records if r.name == "advaudit.models.targets.classes"]
    assert said == ["audit.dataset: classes paired by name; the target's outputs reordered to the data's class order"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="advaudit"):
        align_target(advaudit.load_target(brightness_block()), FMNIST_NAMES, "audit.dataset")
    assert not [r for r in caplog.records if r.name == "advaudit.models.targets.classes"]  # nothing moved: nothing said


def test_a_class_map_key_that_is_no_data_class_is_blamed_on_the_class_map() -> None:
    block = {"function": "tests.models.user_models.mostly_other", "array": "numpy", "input_shape": [1, 28, 28],
             "normalization": "model", "class_map": {"trousr": [1], "bag": [8]}}
    target = advaudit.load_target(block)
    with pytest.raises(AdvauditError, match=r"the target's class 'trousr' is not a class of the world .*; fix the "
                                            r"key 'trousr' of target\.class_map, or say the rename"):
        align_target(target, FMNIST_NAMES, "the world")


def test_a_table_model_is_told_about_features_not_channels_and_its_data_option() -> None:
    with pytest.raises(AdvauditError) as refused:
        parse_target_spec({"path": "wine.skops", "class_names": ["a", "b", "c"], "input_shape": [13]})
    assert "the table's features in the data's own units" in str(refused.value) and "[0, 1]" not in str(refused.value)
    from advaudit.audits.common import target_datamodule

    target = advaudit.load_target({"function": "tests.models.user_models.brightness_votes", "array": "numpy",
                                   "class_names": FMNIST_NAMES, "input_shape": [13], "normalization": "model"})
    with pytest.raises(AdvauditError, match=r"\+dataset@audit\.dataset=tabular audit\.dataset\.name=<its table, "
                                            r"e\.g\. wine>") as refused:
        target_datamodule(target)
    assert "fashion_mnist" not in str(refused.value)
    readme = (REPO / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| a scikit-learn estimator"))
    assert "normalization: model" in row


def test_a_long_message_is_cut_between_words(tmp_path: Path) -> None:
    assert clipped("alpha beta gamma delta", 16) == "alpha beta ..."
    assert clipped("short", 16) == "short"
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2)).eval()
    torch.onnx.export(net, (torch.rand(2, 3, 2, 2),), str(tmp_path / "m.onnx"), dynamo=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    with pytest.raises(AdvauditError) as refused:
        advaudit.load_target({"path": str(tmp_path / "m.onnx"), "class_names": ["a", "b"], "input_shape": [3, 4, 4],
                              "normalization": "model"})
    message = str(refused.value)
    quoted = message.split("the model does not run on inputs of shape [2, 3, 4, 4]: ")[1].split("; check target")[0]
    assert quoted.endswith(" ...") or message.count("; check target.input_shape") == 1
    assert re.search(r"\w$", quoted[:-4]) and len(quoted) <= 240  # the cut falls after a whole word


def test_a_did_you_mean_names_only_what_exists() -> None:
    with pytest.raises(AdvauditError) as refused:
        locate("tests.models.user_modls.LitNett", "target.lightning_module")
    assert str(refused.value).endswith("did you mean target.lightning_module=tests.models.user_models.LitNet?")
    with pytest.raises(AdvauditError) as refused:
        locate("tests.models.user_modls.Zzzzzzzz", "target.lightning_module")
    assert "did you mean" not in str(refused.value)


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    import advaudit.compare.render.figures as plots

    figures: list[Any] = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or Path(path))
    return figures


def test_factor_tick_labels_do_not_overlap_and_points_without_interval_are_not_zoomed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from advaudit.compare.render.figures import factor_histograms, forest_plot

    figures = _captured(monkeypatch)
    factors = [SimpleNamespace(name=n, unit=u, low=lo, high=hi, periodic=False)
               for n, u, lo, hi in (("camera_distance", "", 0.5, 1.6), ("sun_energy", "W", 0.0, 1234.5),
                                    ("scale", "", 0.8123, 1.2377))]
    rng = np.random.default_rng(0)
    rows = [{"factor": f.name, "target": t, "values": rng.uniform(f.low, f.high, 50), "p_holm": 0.5}
            for f in factors for t in ("a", "b")]
    factor_histograms(rows, factors, {"a": "a", "b": "b"}, tmp_path / "f.png")
    fig = figures.pop()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes[:3]:
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert len(boxes) >= 2 and all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), [t.get_text() for t in ax.get_xticklabels()]
    forest = [{"metric": "examine/E_T", "target": "a", "mean": 0.4584}, {"metric": "examine/E_T", "target": "b",
                                                                          "mean": 0.4596}]
    forest_plot(forest, {"a": "a", "b": "b"}, tmp_path / "forest.png", "t")
    low, high = figures.pop().axes[0].get_xlim()
    assert high - low >= 0.1 * 0.4596 and low < 0.4584 and high > 0.4596


def test_the_docs_say_where_a_comparison_and_outputs_are_written() -> None:
    comparing = " ".join((REPO / "docs" / "comparing.md").read_text().split())
    assert "several folders" in comparing and "the first folder" in comparing
    started = " ".join((REPO / "docs" / "getting-started.md").read_text().split())
    assert "ADVAUDIT_ROOT" in started and "the folder you launch" in started
