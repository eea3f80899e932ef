"""``torch.export`` archives (.pt2): detected by their ``archive_format`` and ``models/*.json`` members,
loaded without running Python code, stored as the archive's bytes in an advaudit target file, whatever
batch size they were exported with.

An ``ExportedProgram`` exported with a fixed batch (``torch.export.export(net, (torch.rand(8, ...),))``)
accepts exactly that many inputs. Loading re-exports its graph with a dynamic batch
(:func:`with_dynamic_batch`: the graph's nodes are traced again, without the input checks that pin
the batch; a graph whose ops need that batch size keeps it, and tracing says so), checked against
the archive's own chunk-by-chunk scores on a probe batch: an audit's batch of 1,024 inputs is then
one call at the speed of the module itself. A graph that needs its batch size runs in
:class:`FixedBatch`: padded to whole exported batches, all chunks in one ``torch.vmap`` call where
``vmap`` gives the chunk-by-chunk scores, else chunk by chunk, with a warning that names the fix
(docs/imported-models.md measures the three).
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from advaudit.errors import one_line, warn
from advaudit.models.targets.chunks import in_fixed_batches, pad_rows
from advaudit.models.targets.formats.probe import FileKind, Probe
from advaudit.models.targets.adapters import as_scores

log = logging.getLogger(__name__)

#: the key an advaudit target file's ``backend`` holds for a program stored in this format
BACKEND = "export"
HINTS = {"export": "target={{path: {p}, {common}}} (torch.export: no code needed)"}


def detect(probe: Probe) -> FileKind | None:
    """A ``torch.export`` archive: a zip with an ``archive_format`` member and ``models/*.json``."""
    names = probe.names or []
    if any(n.endswith("/archive_format") or n == "archive_format" for n in names) and \
            any("models/" in n and n.endswith(".json") for n in names):
        return FileKind("export", "a torch.export archive (.pt2)")
    return None


def load(spec: Any, path: Path, kind: FileKind, device: str) -> tuple[nn.Module, None]:
    """The exported program in ``path`` as a module taking any batch (on the CPU)."""
    return exported_module(torch.export.load(str(path)), f"target.path={path}"), None


def from_bytes(data: bytes, device: str = "cpu", trusted_types: list[str] | None = None) -> tuple[nn.Module, None]:
    """The module an advaudit target file stores as ``torch.export`` bytes."""
    return exported_module(torch.export.load(io.BytesIO(data)), "the imported target file"), None


def to_bytes(module: nn.Module, example: Tensor) -> bytes:
    """``module`` exported on ``example`` ``[B, *model_shape]`` with a dynamic batch, as .pt2 bytes
    (raises what ``torch.export`` raises)."""
    program = torch.export.export(module.eval(), (example,), dynamic_shapes=({0: torch.export.Dim.AUTO},))
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return buffer.getvalue()


def exported_module(program: Any, source: str = "the torch.export archive") -> nn.Module:
    """An ``ExportedProgram``'s module, taking any batch (module docstring)."""
    shape = _static_input_shape(program)
    if shape is None:
        return program.module()
    return with_dynamic_batch(program, shape) or FixedBatch(program.module(), shape, source)


class _GraphRunner(nn.Module):
    """Runs a graph module's nodes one by one (``torch.fx.Interpreter``): its input checks, which are
    forward hooks and not nodes, do not run, so tracing it sees which ops depend on the batch size."""

    def __init__(self, graph_module: nn.Module) -> None:
        super().__init__()
        self.graph_module = graph_module

    def forward(self, x: Tensor) -> Any:
        return torch.fx.Interpreter(self.graph_module).run(x)


def with_dynamic_batch(program: Any, shape: list[int]) -> nn.Module | None:
    """``program``'s graph re-exported with a dynamic batch, or ``None`` where its ops need ``shape[0]``
    inputs (or it cannot be traced again); checked against the archive on ``shape[0] + 3`` probe inputs."""
    batch = int(shape[0])
    example = torch.rand(*shape, generator=torch.Generator().manual_seed(0))
    try:
        runner = _GraphRunner(program.module(check_guards=False))
        again = torch.export.export(runner, (example,), dynamic_shapes=({0: torch.export.Dim.AUTO},))
    except Exception as error:  # noqa: BLE001 - not traceable again: the fixed-batch path serves it
        log.info("the exported program cannot be re-exported with a dynamic batch (%s)", one_line(error)[:200])
        return None
    if _static_input_shape(again) is not None:
        return None  # an op of the graph needs the exported batch size (e.g. a view to [8, -1])
    dynamic = again.module()
    probe = torch.rand(batch + 3, *shape[1:], generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = chunked(program.module(), probe, batch)
        try:
            got = as_scores(dynamic(probe))
        except Exception:  # noqa: BLE001 - a guard kept the exported batch size: the fixed-batch path serves it
            return None
    if got.shape != expected.shape or not torch.allclose(got, expected, rtol=1e-4,
                                                         atol=1e-5 * (1.0 + float(expected.abs().max()))):
        return None
    return dynamic


def chunked(module: nn.Module, x: Tensor, batch: int) -> Tensor:
    """``module`` (which takes exactly ``batch`` inputs) on ``x`` ``[B, ...]`` chunk by chunk, the last padded."""
    return in_fixed_batches(lambda chunk: as_scores(module(chunk)), x, batch)


def _static_input_shape(program: Any) -> list[int] | None:
    """The first user input's shape ``[batch, ...]`` when its batch size is a fixed number, else ``None``."""
    names = set(program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in names:
            value = node.meta.get("val")
            if value is not None and value.dim() > 0 and isinstance(value.shape[0], int):
                return [int(d) for d in value.shape]
            return None
    return None


class FixedBatch(nn.Module):
    """Runs ``module``, which takes exactly ``shape[0]`` inputs, on any batch ``[B, *shape[1:]]`` -> ``[B, M]``
    (for a graph :func:`with_dynamic_batch` cannot free of its batch size).

    The batch is padded (repeating its last input) to ``k * shape[0]`` inputs; ``vmap`` then runs the
    ``k`` chunks in one call where :meth:`_vmap_agrees` found it gives the chunk-by-chunk scores
    (``batched``), else the chunks run one by one.
    """

    def __init__(self, module: nn.Module, shape: list[int], source: str = "the torch.export archive") -> None:
        super().__init__()
        self.module, self.batch = module, int(shape[0])
        self.batched = self._vmap_agrees(list(shape[1:]))
        if not self.batched:
            warn(f"{source} was exported for a fixed batch of {self.batch} inputs and torch.vmap cannot run it, so it "
                 f"is audited {self.batch} inputs a call (several times slower); export it with a dynamic batch, "
                 "torch.export.export(net, (x,), dynamic_shapes=({0: torch.export.Dim.AUTO},)), or give the "
                 "module and its state_dict")

    def forward(self, x: Tensor) -> Tensor:
        if not self.batched:
            return chunked(self.module, x, self.batch)
        n = len(x)
        x = pad_rows(x, (-n) % self.batch)
        out = torch.vmap(self._scores)(x.reshape(-1, self.batch, *x.shape[1:]))
        return out.reshape(-1, *out.shape[2:])[:n]

    def _scores(self, chunk: Tensor) -> Tensor:
        return as_scores(self.module(chunk))

    def _vmap_agrees(self, item_shape: list[int]) -> bool:
        """Whether ``vmap`` over chunks gives the chunk-by-chunk scores on a probe of two chunks."""
        probe = torch.rand(2 * self.batch, *item_shape, generator=torch.Generator().manual_seed(0))
        try:
            with torch.no_grad():
                chunks = chunked(self.module, probe, self.batch)
                mapped = torch.vmap(self._scores)(probe.reshape(2, self.batch, *item_shape)).reshape(chunks.shape)
        except Exception as error:  # noqa: BLE001 - an op without a batching rule: chunk by chunk instead
            log.info("torch.vmap cannot run the exported program (%s)", one_line(error)[:200])
            return False
        return bool(torch.allclose(mapped, chunks, rtol=1e-4, atol=1e-5 * (1.0 + float(chunks.abs().max()))))
