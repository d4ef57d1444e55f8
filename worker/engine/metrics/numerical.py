"""Element-wise error between two models' outputs: per-sample values and streaming dataset totals.

Each sample is flattened (``a`` golden, ``b`` compressed, shape ``(N, ...)`` → ``(N, D)``) and compared in
float64. Dataset totals are built from sums, so they can be accumulated batch by batch with memory that
does not grow with the dataset.

SQNR (dB) = 10·log10(Σ a² / Σ (a − b)²) over every element of the dataset (as ONNX Runtime's
qdq_loss_debug). When the error is exactly 0 it is +inf (Python ``float('inf')``). JSON has no inf:
`json_sqnr` serialises it as ``{"sqnr_db": None, "sqnr_db_infinite": True}``; ``None`` with the flag
False means undefined (no samples, or a zero signal with a non-zero error, i.e. −inf dB).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def flatten_samples(x: npt.ArrayLike) -> FloatArray:
    """``(N, ...)`` → ``(N, D)`` float64, one row per sample (a 1-D input is N samples of one element)."""
    a = np.asarray(x, dtype=np.float64)
    return a.reshape(a.shape[0], -1) if a.ndim > 0 else a.reshape(1, 1)


def mse(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Per-sample mean squared error mean((a − b)²); lower is better, 0 for identical outputs."""
    e = flatten_samples(a) - flatten_samples(b)
    return np.asarray(np.mean(e * e, axis=1), dtype=np.float64)


def mae(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Per-sample mean absolute error mean(|a − b|); lower is better."""
    return np.asarray(np.mean(np.abs(flatten_samples(a) - flatten_samples(b)), axis=1), dtype=np.float64)


def max_abs(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Per-sample largest absolute difference max |a − b|; lower is better."""
    return np.asarray(np.max(np.abs(flatten_samples(a) - flatten_samples(b)), axis=1), dtype=np.float64)


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Per-sample cosine similarity a·b / (‖a‖‖b‖) of the flattened samples, in [−1, 1]; higher is better.

    Exactly 1.0 when a == b element-wise (including two zero vectors); 0.0 when only one of them is zero.
    """
    x, y = flatten_samples(a), flatten_samples(b)
    dot = np.sum(x * y, axis=1)
    norms = np.sqrt(np.sum(x * x, axis=1)) * np.sqrt(np.sum(y * y, axis=1))
    cos = np.divide(dot, norms, out=np.zeros_like(dot), where=norms > 0)
    cos = np.clip(cos, -1.0, 1.0)
    return np.asarray(np.where(np.all(x == y, axis=1), 1.0, cos), dtype=np.float64)


def signal_power(a: npt.ArrayLike) -> FloatArray:
    """Per-sample Σ a² (the signal term of SQNR)."""
    x = flatten_samples(a)
    return np.asarray(np.sum(x * x, axis=1), dtype=np.float64)


def error_power(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Per-sample Σ (a − b)² (the noise term of SQNR)."""
    e = flatten_samples(a) - flatten_samples(b)
    return np.asarray(np.sum(e * e, axis=1), dtype=np.float64)


def sqnr_db(signal: float, error: float) -> float:
    """10·log10(signal / error) in dB; higher is better. +inf when error == 0, −inf when only signal == 0."""
    if error == 0.0:
        return float("inf")
    if signal == 0.0:
        return float("-inf")
    return float(10.0 * np.log10(signal / error))


def sqnr_db_per_sample(signal: npt.ArrayLike, error: npt.ArrayLike) -> FloatArray:
    """Element-wise `sqnr_db` over arrays of per-sample Σ a² and Σ (a − b)²."""
    s = np.asarray(signal, dtype=np.float64)
    e = np.asarray(error, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 10.0 * np.log10(s / e)
    out = np.where(s == 0.0, -np.inf, out)
    return np.asarray(np.where(e == 0.0, np.inf, out), dtype=np.float64)


def json_float(x: float) -> float | None:
    """A float for JSON: NaN and ±inf become None."""
    v = float(x)
    return v if np.isfinite(v) else None


def json_sqnr(value: float) -> dict[str, Any]:
    """``{"sqnr_db": float | None, "sqnr_db_infinite": bool}``; +inf (zero error) → None with the flag True."""
    v = float(value)
    return {"sqnr_db": json_float(v), "sqnr_db_infinite": bool(v == float("inf"))}


@dataclass
class NumericalPerSample:
    """The per-sample values of one batch (see the module functions for definitions)."""

    mse: FloatArray
    mae: FloatArray
    max_abs: FloatArray
    cosine: FloatArray
    signal_power: FloatArray
    error_power: FloatArray

    @property
    def sqnr_db(self) -> FloatArray:
        return sqnr_db_per_sample(self.signal_power, self.error_power)


def per_sample(a: npt.ArrayLike, b: npt.ArrayLike) -> NumericalPerSample:
    """All per-sample numerical metrics of a batch at once."""
    x, y = flatten_samples(a), flatten_samples(b)
    e = x - y
    abs_e = np.abs(e)
    sq = e * e
    if x.shape[1] == 0:
        zeros = np.zeros(x.shape[0], dtype=np.float64)
        return NumericalPerSample(zeros, zeros, zeros, np.ones_like(zeros), zeros, zeros)
    return NumericalPerSample(
        mse=np.asarray(sq.mean(axis=1), dtype=np.float64),
        mae=np.asarray(abs_e.mean(axis=1), dtype=np.float64),
        max_abs=np.asarray(abs_e.max(axis=1), dtype=np.float64),
        cosine=cosine(x, y),
        signal_power=np.asarray(np.sum(x * x, axis=1), dtype=np.float64),
        error_power=np.asarray(sq.sum(axis=1), dtype=np.float64),
    )


SUM_BLOCK_ELEMENTS = 1 << 16
"""Elements per float64 block in `sample_sums`: 512 KiB per operand, which stays in cache. Measured on
8 x 1.2 M float32 elements: 0.03 s in blocks against 1.28 s for whole-array float64 copies."""

ROW_DOT_ELEMENTS = 1 << 12
"""Samples at least this large are summed row by row with BLAS dot products (see `sample_sums`)."""


@dataclass
class SampleSums:
    """Per-sample Σ a², Σ (a − b)², Σ a·b and Σ b² of a batch, and the number of elements per sample."""

    signal: FloatArray
    error: FloatArray
    dot: FloatArray
    compressed_power: FloatArray
    n_elements: int

    def cosine(self) -> FloatArray:
        """Per-sample cosine as `cosine` defines it: 1.0 where the error is exactly 0, else a·b / (‖a‖‖b‖)
        clipped to [−1, 1] (0.0 when a norm is 0). NaN where a value was not finite."""
        norms = np.sqrt(self.signal) * np.sqrt(self.compressed_power)
        with np.errstate(invalid="ignore"):
            cos = np.divide(self.dot, norms, out=np.zeros_like(self.dot), where=norms > 0)
            cos = np.where(np.isnan(norms) | np.isnan(self.dot), np.nan, np.clip(cos, -1.0, 1.0))
        return np.asarray(np.where(self.error == 0.0, 1.0, cos), dtype=np.float64)


def sample_sums(a: npt.ArrayLike, b: npt.ArrayLike) -> SampleSums:
    """The per-sample sums of two same-shaped ``(N, ...)`` arrays, computed in float64 blocks of
    SUM_BLOCK_ELEMENTS instead of float64 copies of the whole batch (memory stays bounded whatever the
    layer's size). Finite values that differ give a non-zero error, so error == 0 means a == b.

    Samples of at least ROW_DOT_ELEMENTS elements go through BLAS dot products on reused float64 buffers:
    2.2-2.4x faster than einsum on fresh blocks for 0.1-1.2 M elements, with BLAS on one thread (the layer
    profile sets that; numpy's two-thread OpenBLAS made them 20x slower on a busy 2-core machine)."""
    return shared_sample_sums([np.asarray(a), np.asarray(b)], [(0, 1)])[0]


def shared_sample_sums(
    arrays: Sequence[np.ndarray], comparisons: Sequence[tuple[int, int]]
) -> list[SampleSums]:
    """`sample_sums(arrays[i], arrays[j])` for every (i, j) of `comparisons`, with the same arithmetic (the
    same blocks and dot products, so the same bits), but each array's block converted to float64 once and
    each Σ x² computed once: the layer profile compares golden vs compressed, golden vs local and the
    quantizer's input vs compressed, so 4 conversions and 10 dot products per block instead of 6 and 12.
    Every array must have the same shape (ValueError otherwise)."""
    xs = [np.asarray(a) for a in arrays]
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError(f"shared_sample_sums needs one shape, got {[list(x.shape) for x in xs]}")
    n = xs[0].shape[0] if xs[0].ndim > 0 else 1
    xs = [x.reshape(n, -1) for x in xs]
    d = xs[0].shape[1]
    used = sorted({i for pair in comparisons for i in pair})
    power = np.zeros((len(xs), n), dtype=np.float64)
    error = np.zeros((len(comparisons), n), dtype=np.float64)
    dot = np.zeros((len(comparisons), n), dtype=np.float64)
    if d >= ROW_DOT_ELEMENTS:
        buffers = np.empty((len(xs) + 1, min(d, SUM_BLOCK_ELEMENTS)), dtype=np.float64)
        for r in range(n):
            for c in range(0, d, SUM_BLOCK_ELEMENTS):
                m = min(SUM_BLOCK_ELEMENTS, d - c)
                blocks = [buffers[i, :m] for i in range(len(xs))]
                eb = buffers[-1, :m]
                for i in used:
                    np.copyto(blocks[i], xs[i][r, c : c + m])
                    power[i, r] += np.dot(blocks[i], blocks[i])
                for k, (i, j) in enumerate(comparisons):
                    np.subtract(blocks[i], blocks[j], out=eb)
                    error[k, r] += np.dot(eb, eb)
                    dot[k, r] += np.dot(blocks[i], blocks[j])
    else:
        rows = max(1, SUM_BLOCK_ELEMENTS // max(d, 1))
        for r in range(0, n, rows):
            wide = {i: xs[i][r : r + rows].astype(np.float64) for i in used}
            for i in used:
                power[i, r : r + rows] += np.einsum("ij,ij->i", wide[i], wide[i])
            for k, (i, j) in enumerate(comparisons):
                eb = wide[i] - wide[j]
                error[k, r : r + rows] += np.einsum("ij,ij->i", eb, eb)
                dot[k, r : r + rows] += np.einsum("ij,ij->i", wide[i], wide[j])
    return [SampleSums(power[i], error[k], dot[k], power[j], d) for k, (i, j) in enumerate(comparisons)]


@dataclass
class NumericalAccumulator:
    """Streaming dataset totals: MSE, MAE, max |a − b|, SQNR and cosine mean/min over the samples added."""

    n_samples: int = 0
    n_elements: int = 0
    sum_sq_err: float = 0.0
    sum_abs_err: float = 0.0
    max_abs_err: float = 0.0
    sum_signal: float = 0.0
    sum_cosine: float = 0.0
    min_cosine: float = float("inf")

    def update(self, a: npt.ArrayLike, b: npt.ArrayLike) -> NumericalPerSample:
        """Add a batch of (finite) samples and return its per-sample values."""
        ps = per_sample(a, b)
        n = int(ps.mse.shape[0])
        if n == 0:
            return ps
        d = flatten_samples(a).shape[1]
        self.n_samples += n
        self.n_elements += n * d
        self.sum_sq_err += float(ps.error_power.sum())
        self.sum_abs_err += float(ps.mae.sum() * d) if d else 0.0
        self.max_abs_err = max(self.max_abs_err, float(ps.max_abs.max()))
        self.sum_signal += float(ps.signal_power.sum())
        self.sum_cosine += float(ps.cosine.sum())
        self.min_cosine = min(self.min_cosine, float(ps.cosine.min()))
        return ps

    def sqnr_db(self) -> float:
        """Dataset SQNR in dB (+inf when every error is exactly 0); NaN with no samples."""
        if self.n_samples == 0:
            return float("nan")
        return sqnr_db(self.sum_signal, self.sum_sq_err)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready totals: mse, mae, max_abs_err, sqnr_db (+ sqnr_db_infinite), cosine_mean, cosine_min."""
        if self.n_samples == 0:
            empty: dict[str, Any] = dict.fromkeys(("mse", "mae", "max_abs_err", "cosine_mean", "cosine_min"))
            return empty | {"sqnr_db": None, "sqnr_db_infinite": False}
        n_el = max(self.n_elements, 1)
        return {
            "mse": json_float(self.sum_sq_err / n_el),
            "mae": json_float(self.sum_abs_err / n_el),
            "max_abs_err": json_float(self.max_abs_err),
            **json_sqnr(self.sqnr_db()),
            "cosine_mean": json_float(self.sum_cosine / self.n_samples),
            "cosine_min": json_float(self.min_cosine),
        }


@dataclass
class RegressionAccumulator:
    """Streaming R² of the compressed outputs against the golden outputs taken as the target.

    R² = 1 − Σ(a − b)² / Σ(a − ā)² per output column (ā the golden mean), averaged uniformly over columns
    (scikit-learn's r2_score(golden, compressed) with multioutput="uniform_average"). Higher is better, 1 is
    perfect. A column with constant golden values scores 1.0 if its error is 0, else 0.0 (scikit-learn's
    force_finite convention). The golden variance is merged across batches with Chan's formula, which
    stays accurate when the mean is large.
    """

    n: int = 0
    mean: FloatArray | None = None
    m2: FloatArray | None = None
    sq_err: FloatArray | None = None

    def update(self, a: npt.ArrayLike, b: npt.ArrayLike) -> None:
        """Add a batch of finite samples (golden ``a``, compressed ``b``)."""
        x, y = flatten_samples(a), flatten_samples(b)
        nb = x.shape[0]
        if nb == 0:
            return
        mean_b = x.mean(axis=0)
        m2_b = np.sum((x - mean_b) ** 2, axis=0)
        err_b = np.sum((x - y) ** 2, axis=0)
        if self.mean is None or self.m2 is None or self.sq_err is None:
            self.n, self.mean, self.m2, self.sq_err = nb, mean_b, m2_b, err_b
            return
        total = self.n + nb
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (nb / total)
        self.m2 = self.m2 + m2_b + delta * delta * (self.n * nb / total)
        self.sq_err = self.sq_err + err_b
        self.n = total

    def r2(self) -> float:
        """The uniform average of per-column R² (NaN with fewer than 2 samples)."""
        if self.n < 2 or self.m2 is None or self.sq_err is None:
            return float("nan")
        per_col = np.where(
            self.m2 > 0,
            1.0 - np.divide(self.sq_err, self.m2, out=np.zeros_like(self.m2), where=self.m2 > 0),
            np.where(self.sq_err == 0, 1.0, 0.0),
        )
        return float(np.mean(per_col))
