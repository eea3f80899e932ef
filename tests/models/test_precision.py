"""The target's inference precision and device (advaudit.models.targets.precision): bf16 autocast agrees with float32
on a real examination, inference leaves ordinary tensors, and what cannot run here is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from advaudit.core.records import read_jsonl
from advaudit.errors import AdvauditError
from advaudit.models import load_target
from advaudit.models.targets.precision import configure_target, device_problem
from advaudit.tasks import examine
from tests.conftest import worst_case_overrides

#: stated tolerance of bf16 autocast against float32 (8 mantissa bits: ~0.4% relative per operation)
PROB_TOLERANCE = 0.05  # largest difference of one query's true-class probability
E_T_TOLERANCE = 0.01   # difference of E_T and of the worst valid loss
AGREEMENT = 0.97       # share of queries with the same predicted class


def _examine(make_cfg, target: Path, precision: str) -> tuple[dict, list[dict]]:
    cfg = make_cfg("examine", worst_case_overrides(target, "device=cpu", f"precision={precision}",
                                                   "audit.validity.reference=null"))
    cfg.paths.output_dir = str(Path(cfg.paths.output_dir) / f"precision_{precision}")  # its own run, not a resume
    result = examine(cfg)
    return result, read_jsonl(Path(cfg.paths.output_dir) / "steps.jsonl")


def test_bf16_autocast_agrees_with_float32_on_an_examination(make_cfg, tiny_shapes_target: Path) -> None:
    """Same seed, same instances and conditions: E_T, the worst valid loss, each query's probability and
    predicted class (a failure's verdict) agree with float32 within the stated tolerances."""
    full, full_rows = _examine(make_cfg, tiny_shapes_target, "32")
    half, half_rows = _examine(make_cfg, tiny_shapes_target, "bf16")
    assert [r["s"] for r in full_rows] == [r["s"] for r in half_rows]  # random search: the same conditions
    p32 = torch.tensor([p for r in full_rows for p in r["true_prob"]])
    p16 = torch.tensor([p for r in half_rows for p in r["true_prob"]])
    assert not torch.equal(p32, p16)  # the autocast did run: bf16 rounds the logits
    assert (p32 - p16).abs().max() < PROB_TOLERANCE
    same = [a == b for f, h in zip(full_rows, half_rows) for a, b in zip(f["predicted"], h["predicted"])]
    assert sum(same) / len(same) >= AGREEMENT
    for key in ("examine/E_T", "examine/worst", "examine/E_T@0"):
        assert full[key] == pytest.approx(half[key], abs=E_T_TOLERANCE), key


def test_inference_returns_float32_ordinary_tensors(tiny_shapes_target: Path) -> None:
    """bf16 autocast still returns float32 probabilities summing to 1; they are not inference tensors, so
    callers may change them in place."""
    target = configure_target(load_target(tiny_shapes_target, device="cpu"), "bf16")
    x = torch.rand(5, *target.input_shape, generator=torch.Generator().manual_seed(0))
    probs = target.predict_proba(x)
    assert probs.dtype == torch.float32 and not probs.is_inference()
    assert torch.allclose(probs.sum(1), torch.ones(5), atol=1e-5)
    probs[0, 0] = 0.5  # in place: allowed on an ordinary tensor
    assert target.autocast_dtype == torch.bfloat16


def test_what_cannot_run_here_is_one_line() -> None:
    assert device_problem("cpu", "32") is None and device_problem("cpu", "bf16") is None
    assert "precision=bf16" in device_problem("cpu", "16")
    if not torch.cuda.is_available():
        problem = device_problem("cuda", "32")
        assert problem.startswith("device=cuda") and "device=cpu" in problem and "\n" not in problem
    with pytest.raises(AdvauditError, match="precision=half"):
        configure_target(torch.nn.Linear(2, 2), "half")


def test_a_black_box_target_refuses_reduced_precision(biased_svm: Path) -> None:
    target = load_target(biased_svm)
    assert configure_target(target, "32") is target
    with pytest.raises(AdvauditError, match="needs a torch target"):
        configure_target(target, "bf16")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("precision", ["32", "bf16", "16"])
def test_a_gpu_examination_agrees_with_the_cpu(make_cfg, tiny_shapes_target: Path, precision: str) -> None:
    """On a GPU: rendering, examiner and target on the device; E_T within the tolerance of float32 on the CPU."""
    cpu, _ = _examine(make_cfg, tiny_shapes_target, "32")
    cfg = make_cfg("examine", worst_case_overrides(tiny_shapes_target, "device=cuda", f"precision={precision}",
                                                   "audit.validity.reference=null"))
    cfg.paths.output_dir = str(Path(cfg.paths.output_dir) / f"gpu_{precision}")
    gpu = examine(cfg)
    assert json.loads((Path(cfg.paths.output_dir) / "result.json").read_text())["status"] == "ok"
    assert gpu["examine/E_T"] == pytest.approx(cpu["examine/E_T"], abs=E_T_TOLERANCE)
