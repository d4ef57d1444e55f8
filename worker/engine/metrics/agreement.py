"""Agreement between the discrete decisions of two models, per sample.

Scores are arrays of shape ``(N, C)`` (logits, log-probabilities or probabilities: only their order
matters). Ties are broken towards the lower class index, the same way for both models, so identical
scores always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


def top1(scores: npt.ArrayLike) -> IntArray:
    """Predicted class per sample: argmax over the last axis (first index on ties)."""
    return np.asarray(np.argmax(np.asarray(scores), axis=-1), dtype=np.int64)


def topk_indices(scores: npt.ArrayLike, k: int) -> IntArray:
    """The k highest-scoring classes per sample, best first, shape ``(N, min(k, C))``.

    A stable sort of the negated scores, so ties go to the lower index and the result is a
    deterministic function of the scores.
    """
    s = np.asarray(scores)
    k = max(1, min(int(k), s.shape[-1]))
    order = np.argsort(-s, axis=-1, kind="stable")
    return np.asarray(order[..., :k], dtype=np.int64)


def top1_match(golden: npt.ArrayLike, compressed: npt.ArrayLike) -> BoolArray:
    """Per sample: argmax golden == argmax compressed. The mean is the top-1 exact match rate (higher is better)."""
    return np.asarray(top1(golden) == top1(compressed), dtype=np.bool_)


def topk_agreement(golden: npt.ArrayLike, compressed: npt.ArrayLike, k: int) -> BoolArray:
    """Per sample: the golden top-1 class is among the compressed top-k classes (higher is better)."""
    g = top1(golden)
    ck = topk_indices(compressed, k)
    return np.asarray(np.any(ck == g[:, None], axis=-1), dtype=np.bool_)


def _topk_mask(scores: npt.ArrayLike, k: int) -> BoolArray:
    s = np.asarray(scores)
    mask = np.zeros(s.shape, dtype=np.bool_)
    np.put_along_axis(mask, topk_indices(s, k), True, axis=-1)
    return mask


def topk_overlap(golden: npt.ArrayLike, compressed: npt.ArrayLike, k: int) -> FloatArray:
    """Per sample: |topk(golden) ∩ topk(compressed)| / k, in [0, 1] (higher is better).

    k is clipped to the number of classes.
    """
    g = np.asarray(golden)
    k_eff = max(1, min(int(k), g.shape[-1]))
    both = _topk_mask(g, k_eff) & _topk_mask(compressed, k_eff)
    return np.asarray(both.sum(axis=-1) / k_eff, dtype=np.float64)


def in_topk(scores: npt.ArrayLike, labels: npt.ArrayLike, k: int) -> BoolArray:
    """Per sample: the label is among the k highest-scoring classes (top-k accuracy when averaged)."""
    lab = np.asarray(labels, dtype=np.int64)
    return np.asarray(np.any(topk_indices(scores, k) == lab[:, None], axis=-1), dtype=np.bool_)


@dataclass(frozen=True)
class LabelFlips:
    """Samples whose predicted class differs between the models: index, golden class, compressed class."""

    indices: IntArray
    golden: IntArray
    compressed: IntArray

    def __len__(self) -> int:
        return int(self.indices.shape[0])


def label_flips(golden_class: npt.ArrayLike, compressed_class: npt.ArrayLike, offset: int = 0) -> LabelFlips:
    """The samples where the predicted classes differ (a "label flip"); fewer is better.

    Takes predicted classes (see `top1`); ``offset`` is added to the indices so that a batch can report
    positions in the whole dataset.
    """
    g = np.asarray(golden_class, dtype=np.int64)
    c = np.asarray(compressed_class, dtype=np.int64)
    where = np.flatnonzero(g != c)
    return LabelFlips(indices=(where + int(offset)).astype(np.int64), golden=g[where], compressed=c[where])


def nearest_neighbour_agreement(
    golden: npt.ArrayLike, compressed: npt.ArrayLike, block: int = 1024
) -> tuple[float, BoolArray]:
    """Share of samples whose nearest neighbour is the same in both embedding spaces (higher is better).

    Neighbours are by cosine similarity among the other samples (self excluded; ties go to the lower
    index). Returns the share and the per-sample agreement. Computed in row blocks, so the similarity
    matrix is never held whole: extra memory is O(N·block); the embeddings themselves are O(N·D).
    With fewer than 2 samples there is no neighbour and the share is NaN.
    """
    g = _normalise_rows(golden)
    c = _normalise_rows(compressed)
    n = g.shape[0]
    if n < 2:
        return float("nan"), np.zeros(n, dtype=np.bool_)
    nn_g = _nearest(g, block)
    nn_c = _nearest(c, block)
    agree = np.asarray(nn_g == nn_c, dtype=np.bool_)
    return float(np.mean(agree)), agree


def _normalise_rows(x: npt.ArrayLike) -> FloatArray:
    a = np.asarray(x, dtype=np.float64)
    a = a.reshape(a.shape[0], -1)
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    return np.asarray(np.divide(a, norms, out=np.zeros_like(a), where=norms > 0), dtype=np.float64)


def _nearest(unit_rows: FloatArray, block: int) -> IntArray:
    n = unit_rows.shape[0]
    out = np.empty(n, dtype=np.int64)
    step = max(1, int(block))
    for start in range(0, n, step):
        stop = min(n, start + step)
        sims = unit_rows[start:stop] @ unit_rows.T
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        out[start:stop] = np.argmax(sims, axis=1)
    return out
