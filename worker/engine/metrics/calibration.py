"""Calibration of a classifier from streamed bin sums: reliability bins, ECE and MCE.

Confidence is the max-probability of a sample; a sample is correct when its argmax equals its label.
There are 15 equal-width bins over [0, 1]; bin m holds confidences in (m/15, (m+1)/15] (bin 0 also
holds 0). Each bin keeps only (count, Σ confidence, Σ correct), so batches can be added one at a time and
the result does not depend on how the data was split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

N_BINS = 15

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def bin_edges(n_bins: int = N_BINS) -> FloatArray:
    """The ``n_bins + 1`` edges 0, 1/n, …, 1 of the equal-width confidence bins."""
    return np.linspace(0.0, 1.0, n_bins + 1, dtype=np.float64)


def bin_index(confidence: npt.ArrayLike, n_bins: int = N_BINS) -> IntArray:
    """Bin of each confidence: m such that edges[m] < c ≤ edges[m+1]; 0 (and below) goes to bin 0."""
    c = np.asarray(confidence, dtype=np.float64)
    idx = np.searchsorted(bin_edges(n_bins), c, side="left") - 1
    return np.asarray(np.clip(idx, 0, n_bins - 1), dtype=np.int64)


@dataclass
class ReliabilityBins:
    """Streaming reliability diagram: per bin the sample count, Σ confidence and Σ correct."""

    n_bins: int = N_BINS
    count: IntArray = field(init=False)
    confidence_sum: FloatArray = field(init=False)
    correct_sum: FloatArray = field(init=False)

    def __post_init__(self) -> None:
        self.count = np.zeros(self.n_bins, dtype=np.int64)
        self.confidence_sum = np.zeros(self.n_bins, dtype=np.float64)
        self.correct_sum = np.zeros(self.n_bins, dtype=np.float64)

    def update(self, confidence: npt.ArrayLike, correct: npt.ArrayLike) -> None:
        """Add a batch: per-sample confidence (max-probability) and correctness (bool)."""
        c = np.asarray(confidence, dtype=np.float64).ravel()
        ok = np.asarray(correct, dtype=np.float64).ravel()
        idx = bin_index(c, self.n_bins)
        self.count += np.bincount(idx, minlength=self.n_bins).astype(np.int64)
        self.confidence_sum += np.bincount(idx, weights=c, minlength=self.n_bins)
        self.correct_sum += np.bincount(idx, weights=ok, minlength=self.n_bins)

    def merge(self, other: ReliabilityBins) -> None:
        """Add another accumulator's sums into this one (same number of bins)."""
        if other.n_bins != self.n_bins:
            raise ValueError(f"cannot merge {other.n_bins} bins into {self.n_bins}")
        self.count += other.count
        self.confidence_sum += other.confidence_sum
        self.correct_sum += other.correct_sum

    @property
    def total(self) -> int:
        return int(self.count.sum())

    def mean_confidence(self) -> FloatArray:
        """Mean confidence per bin (NaN for an empty bin)."""
        return _safe_ratio(self.confidence_sum, self.count)

    def accuracy(self) -> FloatArray:
        """Accuracy per bin (NaN for an empty bin)."""
        return _safe_ratio(self.correct_sum, self.count)

    def ece(self) -> float:
        """Expected calibration error Σ_b (n_b/N)·|acc_b − conf_b|, in [0, 1]; lower is better. NaN if empty."""
        n = self.total
        if n == 0:
            return float("nan")
        return float(np.sum(np.abs(self.correct_sum - self.confidence_sum)) / n)

    def mce(self) -> float:
        """Maximum calibration error max_b |acc_b − conf_b| over non-empty bins; lower is better. NaN if empty."""
        filled = self.count > 0
        if not np.any(filled):
            return float("nan")
        gap = np.abs(self.accuracy()[filled] - self.mean_confidence()[filled])
        return float(np.max(gap))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ece, mce, n and one entry per bin (empty bins carry None for confidence/accuracy)."""
        edges = bin_edges(self.n_bins)
        conf, acc = self.mean_confidence(), self.accuracy()
        bins = [
            {
                "lower": float(edges[m]),
                "upper": float(edges[m + 1]),
                "count": int(self.count[m]),
                "confidence": _none_if_nan(conf[m]),
                "accuracy": _none_if_nan(acc[m]),
            }
            for m in range(self.n_bins)
        ]
        return {
            "ece": _none_if_nan(self.ece()),
            "mce": _none_if_nan(self.mce()),
            "n": self.total,
            "bins": bins,
        }


def _safe_ratio(num: FloatArray, den: IntArray) -> FloatArray:
    out = np.full(num.shape, np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _none_if_nan(x: float | np.floating[Any]) -> float | None:
    v = float(x)
    return None if np.isnan(v) else v
