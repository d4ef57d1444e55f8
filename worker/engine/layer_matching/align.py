"""Align the weighted layers of two graphs: an order-preserving alignment (the layers of both graphs in
topological order, as in sequence alignment) scored by op class, weight shape and weight similarity,
then a second pass that pairs what is left by weight similarity alone (exports may order independent
branches differently: the int8 MiniLM gathers token-type before position embeddings).

Pair score, in [0, 1], is also the match's confidence: 0.2 for the same op class, +0.3 when the weight
shapes agree, +0.5 x the cosine of the dequantized weights (when shapes agree and both are known; when
either weight is unknown, the shape's +0.3 is all). A correct int8 pair scores about 1 (cosine > 0.99),
two different layers of the same shape about 0.5 (cosine near 0)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from worker.engine.layer_matching.graph_layers import GraphLayer
from worker.engine.layer_matching.weights import cosine

SIMILARITY_PASS_MIN_COSINE = 0.9
"""Leftover layers pair by weights alone only above this cosine (different trained matrices of one shape
have cosines near 0; an int8 copy of the same matrix above 0.99)."""

ALIGNED_MIN_COSINE = 0.5
"""An aligned same-shape pair below this cosine is undone (order alone put it there): far above the ~0 of
two unrelated matrices, below what a rescaled copy keeps (a BatchNorm folded into a Conv rescales each
output channel)."""


@dataclass(frozen=True)
class Scored:
    score: float
    cosine: float | None


def pair_score(g: GraphLayer, c: GraphLayer) -> Scored | None:
    if g.op_class != c.op_class:
        return None
    if g.shape is None or c.shape is None:
        return Scored(0.2 + (0.3 if g.op_type == c.op_type else 0.0), None)
    if g.shape != c.shape:
        return Scored(0.2, None)
    assert g.weight is not None and c.weight is not None
    cos = cosine(g.weight, c.weight)
    return Scored(0.5 + 0.5 * max(cos, 0.0), cos)


def align(
    golden: Sequence[GraphLayer], compressed: Sequence[GraphLayer]
) -> list[tuple[int, int, Scored, str]]:
    """(golden position, compressed position, score, method) for every pair, method "structure" (the
    order-preserving alignment) or "weights" (the leftover pass)."""
    n, m = len(golden), len(compressed)
    scores: dict[tuple[int, int], Scored] = {}
    for i, g in enumerate(golden):
        for j, c in enumerate(compressed):
            s = pair_score(g, c)
            if s is not None:
                scores[(i, j)] = s
    best = np.zeros((n + 1, m + 1))
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            s = scores.get((i, j))
            take = best[i + 1, j + 1] + s.score if s is not None else -1.0
            best[i, j] = max(best[i + 1, j], best[i, j + 1], take)
    pairs: list[tuple[int, int, Scored, str]] = []
    i = j = 0
    while i < n and j < m:
        s = scores.get((i, j))
        if s is not None and np.isclose(best[i, j], best[i + 1, j + 1] + s.score):
            pairs.append((i, j, s, "structure"))
            i, j = i + 1, j + 1
        elif best[i, j] == best[i + 1, j]:
            i += 1
        else:
            j += 1
    # An aligned pair of same-shape weights that are not alike (cosine under the bar) is undone, and its
    # layers join the leftover pass: the alignment was forced there by order alone.
    pairs = [p for p in pairs if p[2].cosine is None or p[2].cosine >= ALIGNED_MIN_COSINE]
    used_g = {p[0] for p in pairs}
    used_c = {p[1] for p in pairs}
    left = sorted(
        (
            (s.cosine, i, j, s)
            for (i, j), s in scores.items()
            if i not in used_g
            and j not in used_c
            and s.cosine is not None
            and s.cosine >= SIMILARITY_PASS_MIN_COSINE
        ),
        key=lambda item: -item[0],
    )
    for _, i, j, s in left:
        if i not in used_g and j not in used_c:
            pairs.append((i, j, s, "weights"))
            used_g.add(i)
            used_c.add(j)
    return sorted(pairs, key=lambda p: p[0])
