"""Entropy (KL) calibration of an activation range: the TensorRT histogram threshold search (issue 33).

Szymon Migacz, "8-bit Inference with TensorRT" (GTC 2017), computed as onnxruntime's
`HistogramCollector.get_entropy_threshold` computes it, so that a simulated range is the range
onnxruntime's Entropy calibrator chooses on the same data (the runtime a user deploys with):

1. a histogram of the golden activations over the symmetric range [−T, T], T = max |x|, with
   `ENTROPY_BINS` bins (np.histogram's bins on the float32 values: onnxruntime's, on the same data);
2. for every window of bins [zero − i, zero + i + 1) around the zero bin (i from L // 2 up to the whole
   histogram; L = 2^bits − 1 levels): P = the window's counts with the counts outside it added to its
   first and last bins (what clipping does); Q = the window merged into L groups of ⌊size / L⌋ bins
   (the bins left over added to the last group), each group's count spread over the group's bins where P
   is non-zero, stored as integers (truncated, as onnxruntime stores it); both smoothed (a zero bin
   becomes 1e-4, taken off the non-zero ones) and normalised, in float32;
3. the window with the least KL(P‖Q) (the first on ties) gives the range (its edges), clamped to the
   observed [min, max].

MXNet's reference differs in three details (Q in floating point, Q zeroed where P is zero, the left-over
bins spread in Q): on the digits CNN those move the chosen threshold by 15 to 190 bins, because the KL
curve is flat near its minimum; this module follows onnxruntime instead, and
tests/engine/test_entropy_calibration.py checks that the ranges agree with its calibrator.
"""

from __future__ import annotations

import numpy as np

ENTROPY_BINS = 2048
"""Histogram bins over [−max|x|, max|x|] (TensorRT's 2048)."""
SMOOTHING = 1e-4
"""What a zero bin becomes before the KL (as MXNet, TensorRT and onnxruntime)."""


def symmetric_histogram(values: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts and edges of `values` (their own dtype, as onnxruntime bins them) over [−threshold, threshold]."""
    limit = float(threshold)  # the max |x| of float32 values is a float32 number: exact as a Python float
    return np.histogram(values, bins=ENTROPY_BINS, range=(-limit, limit))


def _smooth(p: np.ndarray) -> np.ndarray | None:
    """onnxruntime's quant_utils.smooth_distribution (None: all zero, or a bin would become ≤ 0)."""
    is_zeros = (p == 0).astype(np.float32)
    is_nonzeros = (p != 0).astype(np.float32)
    n_zeros = is_zeros.sum()
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        return None
    eps1 = SMOOTHING * float(n_zeros) / float(n_nonzeros)
    hist = p.astype(np.float32)
    hist += SMOOTHING * is_zeros + (-eps1) * is_nonzeros
    return None if (hist <= 0).any() else hist


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p‖q) of the normalised float32 histograms (both positive after smoothing)."""
    pk = p / np.sum(p)
    qk = q / np.sum(q)
    return float(np.sum(pk * np.log(pk / qk)))


def entropy_threshold(
    hist: np.ndarray, edges: np.ndarray, levels: int, lo: float, hi: float
) -> tuple[float, float]:
    """The (low, high) range minimising KL(P‖Q) over the symmetric windows of `hist` (see the module
    docstring), clamped to [lo, hi]; (lo, hi) when the histogram is empty or coarser than `levels`."""
    counts = np.asarray(hist, dtype=np.int64)
    n = counts.size
    zero = n // 2
    half = levels // 2
    if counts.sum() <= 0 or half > zero:
        return lo, hi
    cumulative = np.concatenate([[0], np.cumsum(counts)])
    total = int(cumulative[-1])
    best: tuple[float, int, int] | None = None
    for i in range(half, zero + 1):
        start, stop = zero - i, min(zero + i + 1, n)
        sliced = counts[start:stop]
        p = sliced.copy()
        p[0] += cumulative[start]
        p[-1] += total - cumulative[stop]
        merged = sliced.size // levels
        body = levels * merged
        groups = sliced[:body].reshape(levels, merged).sum(axis=1)
        groups[-1] += sliced[body:].sum()
        occupied = (p[:body] != 0).reshape(levels, merged).sum(axis=1)
        spread = np.zeros(levels, dtype=np.int64)
        np.floor_divide(groups, occupied, out=spread, where=occupied > 0)  # counts ≥ 0: truncation
        q = np.zeros(p.size, dtype=np.int64)
        q[:body] = np.repeat(spread, merged)
        ps, qs = _smooth(p), _smooth(q)
        divergence = np.inf if ps is None or qs is None else _kl(ps, qs)
        if best is None or divergence < best[0]:
            best = (divergence, start, stop)
    assert best is not None
    low, high = float(edges[best[1]]), float(edges[best[2]])
    return max(low, lo), min(high, hi)
