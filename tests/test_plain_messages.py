"""Messages and failure records are plain text: no terminal colour codes, whatever an exception held."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from advaudit.core.run_records import write_failure
from advaudit.errors import AdvauditError, classify, one_line, strip_ansi, warn
from advaudit.models import load_target

ESCAPE = "\x1b"


def test_escape_sequences_are_stripped_and_the_text_kept() -> None:
    coloured = ("\x1b[1mbold\x1b[0m, \x1b[38;5;196mred\x1b[m, \x1b]8;;https://pytorch.org\x07a link\x1b]8;;\x07, "
                "\x1b[2Kcleared\x1bM")
    assert strip_ansi(coloured) == "bold, red, a link, cleared"
    assert strip_ansi("plain [1m] text; 50% done") == "plain [1m] text; 50% done"
    assert one_line(AdvauditError("first \x1b[1mline\x1b[0m\n\n  second")) == "first line; second"


def _failure_record(out: Path, error: BaseException) -> tuple[dict, str]:
    write_failure(out, "examine", OmegaConf.create({"target": "module.pt"}),
                  error, lambda cfg: OmegaConf.to_container(cfg))
    text = (out / "result.json").read_text()
    return json.loads(text), text


def test_a_pickled_module_is_refused_in_plain_text(tmp_path: Path) -> None:
    """``torch.save(model)`` read through advaudit's loader: torch's own text carries colour codes;
    neither the one-line message nor result.json does."""
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)), path)
    with pytest.raises(Exception) as raw:
        torch.load(path, weights_only=True)
    assert ESCAPE in str(raw.value)  # what is being stripped: torch's "Weights only load failed" text
    with pytest.raises(Exception) as refused:
        load_target(path)
    kind, message = classify(refused.value)
    assert kind == "user" and message and ESCAPE not in message
    record, text = _failure_record(tmp_path, refused.value)
    assert record["error"] == message and ESCAPE not in text and "\\u001b" not in text


def test_bugs_and_warnings_are_plain_too(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    kind, message = classify(RuntimeError("\x1b[31mCUDA error\x1b[0m: device-side assert"))
    assert (kind, message) == ("bug", "RuntimeError: CUDA error: device-side assert")
    record, text = _failure_record(tmp_path, RuntimeError("\x1b[31mboom\x1b[0m"))
    assert record["error"] == "RuntimeError: boom" and "\\u001b" not in text
    with caplog.at_level(logging.WARNING, logger="advaudit"):
        warn("\x1b[33mlegal but odd\x1b[0m")
    assert caplog.messages == ["warning: legal but odd"]
