"""Target file formats: every format module keeps the contract the one loader dispatches on, and the one
chunk-and-pad helper gives torch and numpy the same answer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from advaudit.models.targets import formats
from advaudit.models.targets.chunks import in_fixed_batches, pad_rows
from advaudit.models.targets.formats import FORMATS, PROGRAM_BACKENDS, format_of, program_format


def test_each_kind_belongs_to_one_format_and_each_format_can_be_detected_and_loaded() -> None:
    kinds = [kind for fmt in FORMATS for kind in fmt.HINTS]
    assert len(kinds) == len(set(kinds)), "a file kind is claimed by two formats"
    for fmt in FORMATS:
        assert hasattr(fmt, "detect") or hasattr(fmt, "detect_payload"), fmt.__name__
        assert all(format_of(kind) is fmt for kind in fmt.HINTS)
        assert hasattr(fmt, "load") or fmt is formats.own, f"{fmt.__name__} cannot load a file a target block names"
    assert format_of("unknown") is None and format_of("torch_other") is None


def test_every_program_an_advaudit_file_can_hold_is_loaded_and_stored_by_its_format() -> None:
    assert set(PROGRAM_BACKENDS) == {"export", "torchscript", "onnx", "skops"}
    for backend in PROGRAM_BACKENDS:
        fmt = program_format(backend)
        assert callable(fmt.from_bytes) and callable(fmt.to_bytes) and backend in fmt.HINTS


def test_a_torchscript_program_round_trips_through_its_format() -> None:
    net = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh()).eval()
    x = torch.rand(7, 5, generator=torch.Generator().manual_seed(0))
    fmt = program_format("torchscript")
    module, predict = fmt.from_bytes(fmt.to_bytes(net, x[:3]))
    assert predict is None and torch.allclose(module(x), net(x))


@pytest.mark.parametrize("n", [1, 4, 11, 12])
def test_fixed_batches_see_exactly_the_batch_and_give_each_row_its_own_answer(n: int) -> None:
    rows = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    seen: list[int] = []

    def run(chunk):  # a model that takes exactly 4 inputs: row sums, as [4, 1]
        seen.append(len(chunk))
        return chunk.sum(1, keepdims=True) if isinstance(chunk, np.ndarray) else chunk.sum(1, keepdim=True)

    expected = rows.sum(1, keepdims=True)
    assert np.array_equal(in_fixed_batches(run, rows, 4), expected)
    assert torch.equal(in_fixed_batches(run, torch.from_numpy(rows), 4), torch.from_numpy(expected))
    assert set(seen) == {4} and len(seen) == 2 * -(-n // 4)


def test_padding_repeats_the_last_row() -> None:
    x = torch.tensor([[1.0], [2.0]])
    assert pad_rows(x, 2).flatten().tolist() == [1.0, 2.0, 2.0, 2.0]
    assert pad_rows(x.numpy(), 1).flatten().tolist() == [1.0, 2.0, 2.0]
    assert pad_rows(x, 0) is x
