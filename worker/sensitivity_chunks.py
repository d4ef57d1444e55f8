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

import numpy as np

PREFIX_WEIGHT = 1.3
"""Cost of a prefix MAC against a suffix MAC (fit: 1.32)."""
CELL_OVERHEAD = 0.14
"""A cell's fixed cost as a share of one whole-model pass over the calibration set (fit: 0.137; about 48 ms
against 0.35 s for a golden pass: the cell's weights and session, a run call and metric fold per batch)."""


@dataclass(frozen=True)
class Chunk:
    layers: list[str]
    cost: float
    """Expected cost in whole-model passes over the calibration set (1.0: one golden pass)."""


def chunk_cost(downstream: Sequence[float], total: float, n_configs: int) -> float:
    """The cost of one chunk whose layers have these downstream MACs (depth order), in MACs."""
    prefix = PREFIX_WEIGHT * (total - downstream[-1])
    return prefix + n_configs * (float(sum(downstream)) + CELL_OVERHEAD * total * len(downstream))


def _greedy(downstream: list[float], total: float, n_configs: int, cap: float) -> list[int] | None:
    """Chunk end indices packing layers while a chunk's cost stays <= cap (None: a single layer exceeds it)."""
    ends: list[int] = []
    start = 0
    for i in range(1, len(downstream) + 1):
        if chunk_cost(downstream[start:i], total, n_configs) > cap:
            if i - 1 == start:
                return None
            ends.append(i - 1)
            start = i - 1
    ends.append(len(downstream))
    return ends


def balanced_chunks(
    names: Sequence[str], layers: Sequence[object], n_chunks: int, n_configs: int
) -> list[Chunk]:
    """`names` (a subset of the model's layers, depth order) in at most `n_chunks` contiguous chunks whose
    largest expected cost is as small as it can be. `layers`: every layer of the model in depth order,
    each with `.name` and `.macs` (None when unknown: then equal numbers of layers, cost per layer 1)."""
    names = list(names)
    macs = [getattr(layer, "macs", None) for layer in layers]
    if not names:
        return []
    n_chunks = max(1, min(n_chunks, len(names)))
    if any(m is None for m in macs):
        parts = [list(p) for p in np.array_split(np.array(names, dtype=object), n_chunks)]
        return [Chunk([str(n) for n in p], float(len(p))) for p in parts if len(p)]
    suffix = np.cumsum(np.array(macs[::-1], dtype=np.float64))[::-1]
    by_name = {str(layer.name): float(d) for layer, d in zip(layers, suffix, strict=True)}
    total = float(suffix[0]) if len(suffix) else 0.0
    if total <= 0:
        total = 1.0
    downstream = [by_name[n] for n in names]
    low = max(chunk_cost([d], total, n_configs) for d in downstream)
    high = chunk_cost(downstream, total, n_configs)
    best = _greedy(downstream, total, n_configs, high) or [len(names)]
    for _ in range(60):  # the costs are floats: bisect to a relative 1e-6 of the whole scan's cost
        if high - low <= 1e-6 * high:
            break
        cap = (low + high) / 2
        ends = _greedy(downstream, total, n_configs, cap)
        if ends is not None and len(ends) <= n_chunks:
            best, high = ends, cap
        else:
            low = cap
    chunks: list[Chunk] = []
    start = 0
    for end in best:
        chunks.append(Chunk(names[start:end], chunk_cost(downstream[start:end], total, n_configs) / total))
        start = end
    return chunks
