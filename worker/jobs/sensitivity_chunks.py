"""How a sensitivity scan is cut into chunks for the worker pool, and what each chunk is expected to cost.

A chunk is a contiguous run of layers (in depth order). Its cost, in multiply-accumulates over the
calibration set, is one golden prefix pass up to its deepest layer (the cut tensors every cell of the chunk
starts from) plus, per layer and configuration, the suffix from that layer to the output and a fixed
overhead per cell (building the cell's weights and session, folding its metrics):

    cost(chunk) = PREFIX_WEIGHT * (T - D[last]) + n_configs * sum(D[i] + CELL_OVERHEAD * T for i in chunk)

with D[i] the MACs from layer i to the end and T the whole model's. The two constants are a least-squares
fit of 16 chunk timings (ResNet-18 shape at 64 px, 256 inputs, W8/W4, one thread; residuals <= 0.3 golden
passes, most <= 0.1): a MAC of the prefix pass costs more than one of a suffix (it also writes out every cut
tensor), and each cell pays about 0.14 golden passes whatever its depth. The previous split balanced the
suffixes alone: deep chunks (short suffixes, but a prefix pass through nearly the whole model) were the
job's longest (ResNet-18 shape at 64 px, 256 inputs, 8 chunks, one worker: the three deepest chunks took
1.5-2.0 s against 0.7 s for one shallow layer), so the last chunk taken decided when a 2-worker job ended.

The split minimises the largest chunk cost (a binary search on the cap; a greedy pass is exact because
a chunk's cost only grows when it takes one more layer at either end). Each chunk's spec carries its cost,
and worker/fanout.py sends the chunks largest first (`dispatch_order`): the small ones fill the tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

PREFIX_WEIGHT = 1.3
"""Cost of a prefix MAC against a suffix MAC (fit: 1.32)."""
CELL_OVERHEAD = 0.14
"""A cell's fixed cost as a share of one whole-model pass over the calibration set (fit: 0.137; about 48 ms
against 0.35 s for a golden pass: the cell's weights and session, a run call and metric fold per batch)."""


class LayerLike(Protocol):
    """What the split reads of a layer (worker.engine.compression's LayerSpec)."""

    @property
    def name(self) -> str: ...

    @property
    def macs(self) -> int | None: ...


@dataclass(frozen=True)
class Chunk:
    layers: list[str]
    cost: float
    """Expected cost in whole-model passes over the calibration set (1.0: one golden pass)."""


def chunk_cost(
    downstream: Sequence[float], total: float, n_configs: int, whole_model_cells: int = 0
) -> float:
    """The cost of one chunk whose layers have these downstream MACs (depth order), in MACs: its
    suffix cells (n_configs per layer), plus `whole_model_cells` per layer that re-run the whole model
    (the "all but" cells, and every cell of a model the scan does not split: torch models)."""
    cells = n_configs * (float(sum(downstream)) + CELL_OVERHEAD * total * len(downstream))
    whole = whole_model_cells * len(downstream) * total * (1 + CELL_OVERHEAD)
    prefix = PREFIX_WEIGHT * (total - downstream[-1]) if n_configs else 0.0
    return prefix + cells + whole


def _greedy(downstream: list[float], total: float, cells: tuple[int, int], cap: float) -> list[int] | None:
    """Chunk end indices packing layers while a chunk's cost stays <= cap (None: a single layer exceeds it)."""
    ends: list[int] = []
    start = 0
    for i in range(1, len(downstream) + 1):
        if chunk_cost(downstream[start:i], total, *cells) > cap:
            if i - 1 == start:
                return None
            ends.append(i - 1)
            start = i - 1
    ends.append(len(downstream))
    return ends


def balanced_chunks(
    names: Sequence[str],
    layers: Sequence[LayerLike],
    n_chunks: int,
    n_configs: int,
    whole_model_cells: int = 0,
) -> list[Chunk]:
    """`names` (a subset of the model's layers, depth order) in at most `n_chunks` contiguous chunks whose
    largest expected cost is as small as it can be. `layers`: every layer of the model in depth order,
    each with `.name` and `.macs` (None when unknown: then equal numbers of layers, each costing its
    cells as whole-model passes). n_configs: suffix cells per layer; whole_model_cells: cells per layer
    that re-run the whole model (see `chunk_cost`)."""
    cells = (n_configs, whole_model_cells)
    names = list(names)
    macs = [layer.macs for layer in layers]
    if not names:
        return []
    n_chunks = max(1, min(n_chunks, len(names)))
    if any(m is None for m in macs):
        parts = [list(p) for p in np.array_split(np.array(names, dtype=object), n_chunks)]
        per_layer = (n_configs + whole_model_cells) * (1 + CELL_OVERHEAD)  # in whole-model passes
        return [Chunk([str(n) for n in p], per_layer * len(p)) for p in parts if len(p)]
    suffix = np.cumsum(np.array(macs[::-1], dtype=np.float64))[::-1]
    by_name = {str(layer.name): float(d) for layer, d in zip(layers, suffix, strict=True)}
    total = float(suffix[0]) if len(suffix) else 0.0
    if total <= 0:
        total = 1.0
    downstream = [by_name[n] for n in names]
    low = max(chunk_cost([d], total, *cells) for d in downstream)
    high = chunk_cost(downstream, total, *cells)
    best = _greedy(downstream, total, cells, high) or [len(names)]
    for _ in range(60):  # the costs are floats: bisect to a relative 1e-6 of the whole scan's cost
        if high - low <= 1e-6 * high:
            break
        cap = (low + high) / 2
        ends = _greedy(downstream, total, cells, cap)
        if ends is not None and len(ends) <= n_chunks:
            best, high = ends, cap
        else:
            low = cap
    chunks: list[Chunk] = []
    start = 0
    for end in best:
        chunks.append(Chunk(names[start:end], chunk_cost(downstream[start:end], total, *cells) / total))
        start = end
    return chunks
