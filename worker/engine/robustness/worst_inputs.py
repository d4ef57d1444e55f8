"""The corrupted input rows of each robustness point's worst samples (issue 13: a user sees the corrupted
picture a worst sample was judged on, adversarial slices included).

While a point's chunks stream (run.py), `RunningWorst` keeps the image rows of the current worst
candidates only: after each chunk, the chunk's own best k candidates (k = WORST_SAMPLES) are merged with
the k kept ones and the k worst of the 2k stay. The ranking is one, `top_positions` over
`ranked_divergence`, which run.py's `worst_samples` uses too: divergence descending, then sample index
ascending, a total order, so the rows kept at the end belong to exactly the samples the document lists,
whatever the chunking. A sample is not ranked when its outputs are not finite (the table's ``finite``) or
its divergence is not a finite number: NaN, or +inf (a KL whose log-softmax underflowed to -inf on a
class the golden model is sure of, an MSE that overflowed float64). Such a sample has no figure to list
(the document's divergence is a number; JSON has no inf), so the k worst are the k worst finite ones,
and the point's mean (point_metrics) says that something diverged without bound. Memory: at most 2k rows
per image array at once (2k of a 224 x 224 x 3 float32 image: 12 MiB), never a chunk's copy.

Only image arrays are kept (float, rank 4: transforms.is_image) that the slice changes; token and flat
float inputs have no picture.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

WorstInputSink = Callable[[str, int, int, dict[str, np.ndarray]], bool]
"""sink(slice name, severity, sample index, {image array name: corrupted row}) for each worst sample of a
point once the point is done; returns whether it kept a picture of it (the worst sample's ``image``). The
rows are handed over point by point, so a caller that renders them at once holds one point's rows (all of
a job's 240 rows per image array, 8 image slices x 3 severities x 10, of 224 x 224 x 3 float32 would be
about 140 MiB)."""


def ranked_divergence(table: Mapping[str, np.ndarray], divergence: str) -> np.ndarray:
    """The per-sample divergence the worst samples are ranked by: -inf (never ranked) for a sample whose
    outputs or divergence are not finite (NaN, +inf)."""
    values = np.asarray(table[divergence], dtype=np.float64)
    finite = np.asarray(table["finite"]).astype(bool) & np.isfinite(values)
    return np.where(finite, values, -np.inf)


def top_positions(index: np.ndarray, value: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k highest finite values (ties by lower index), best first: with `ranked_divergence`
    the one ranking of the worst samples (run.worst_samples, RunningWorst)."""
    order = np.lexsort((index, -value))[:k]
    return order[np.isfinite(value[order])]


class RunningWorst:
    """The k worst samples seen so far of one point, with their corrupted image rows."""

    def __init__(self, names: list[str], k: int) -> None:
        self.names, self.k = names, k
        self.index = np.empty(0, dtype=np.int64)
        self.value = np.empty(0, dtype=np.float64)
        self.rows: dict[str, np.ndarray] = {}

    def add(self, start: int, values: np.ndarray, chunk: Mapping[str, np.ndarray]) -> None:
        """values: the ranked divergence of the chunk's rows (dataset rows start, start + 1, ...); chunk:
        its corrupted inputs."""
        if not self.names:
            return
        index = np.arange(start, start + len(values), dtype=np.int64)
        best = top_positions(index, values, self.k)
        cand_index = np.concatenate([self.index, index[best]])
        cand_value = np.concatenate([self.value, values[best]])
        keep = top_positions(cand_index, cand_value, self.k)
        rows = {
            n: np.concatenate([self.rows[n], np.asarray(chunk[n][best])])
            if n in self.rows
            else np.asarray(chunk[n][best])
            for n in self.names
        }
        self.index, self.value = cand_index[keep], cand_value[keep]
        self.rows = {n: np.ascontiguousarray(r[keep]) for n, r in rows.items()}

    def hand_over(self, sink: WorstInputSink, name: str, severity: int) -> set[int]:
        """Give each kept sample's rows to sink; returns the indices whose picture the sink kept."""
        if not self.names:
            return set()
        kept = set()
        for i, sample in enumerate(self.index.tolist()):
            if sink(name, severity, sample, {n: r[i] for n, r in self.rows.items()}):
                kept.add(sample)
        return kept
