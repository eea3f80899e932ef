"""``torch.export`` archives, whatever batch size they were exported with.

An ``ExportedProgram`` exported with a fixed batch (``torch.export.export(net, (torch.rand(8, ...),))``)
accepts exactly that many inputs. :class:`FixedBatch` runs it on any batch: the inputs are padded to
a whole number of exported batches and, where ``torch.vmap`` runs the program (checked against
chunk-by-chunk results on a probe batch when the archive is loaded), all chunks go through one
call, so an audit's batch of 1,024 inputs costs one call, not 128 calls of 8
(docs/results/imported-models.md). A program ``vmap`` cannot run is run chunk by chunk, and
loading says so, with the fix (export with a dynamic batch).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor, nn

from advaudit.errors import one_line, warn
from advaudit.models.imported.adapters import as_scores

log = logging.getLogger(__name__)


def exported_module(program: Any, source: str = "the torch.export archive") -> nn.Module:
    """An ``ExportedProgram``'s module; a :class:`FixedBatch` around it when its batch size is fixed."""
    module = program.module()
    shape = _static_input_shape(program)
    return FixedBatch(module, shape, source) if shape is not None else module


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
    """Runs ``module``, which takes exactly ``shape[0]`` inputs, on any batch ``[B, *shape[1:]]`` -> ``[B, M]``.

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
        n = len(x)
        pad = (-n) % self.batch
        if pad:
            x = torch.cat([x, x[-1:].expand(pad, *x.shape[1:])])
        if self.batched:
            out = torch.vmap(self._scores)(x.reshape(-1, self.batch, *x.shape[1:]))
            return out.reshape(-1, *out.shape[2:])[:n]
        return torch.cat([self._scores(x[i:i + self.batch]) for i in range(0, len(x), self.batch)])[:n]

    def _scores(self, chunk: Tensor) -> Tensor:
        return as_scores(self.module(chunk))

    def _vmap_agrees(self, item_shape: list[int]) -> bool:
        """Whether ``vmap`` over chunks gives the chunk-by-chunk scores on a probe of two chunks."""
        probe = torch.rand(2 * self.batch, *item_shape, generator=torch.Generator().manual_seed(0))
        try:
            with torch.no_grad():
                chunks = torch.cat([self._scores(probe[:self.batch]), self._scores(probe[self.batch:])])
                mapped = torch.vmap(self._scores)(probe.reshape(2, self.batch, *item_shape)).reshape(chunks.shape)
        except Exception as error:  # noqa: BLE001 - an op without a batching rule: chunk by chunk instead
            log.info("torch.vmap cannot run the exported program (%s)", one_line(error)[:200])
            return False
        return bool(torch.allclose(mapped, chunks, rtol=1e-4, atol=1e-5 * (1.0 + float(chunks.abs().max()))))
