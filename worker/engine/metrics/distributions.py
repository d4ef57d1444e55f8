"""Divergences between the output distributions of two classifiers, per sample, in nats.

Conventions: golden logits ``a``, compressed logits ``b``,
``lp = log_softmax(a)``, ``lq = log_softmax(b)``, ``P = exp(lp)``, ``Q = exp(lq)``. Every function takes
log-probabilities of shape ``(N, C)`` (classes on the last axis), accumulates in float64 and returns one
value per sample. Terms where the weighting probability is exactly 0 contribute 0 (the limit
``0 · log 0 = 0``), so no epsilon is needed for log-probabilities computed from logits. Identical inputs
give exactly 0.0 for every divergence.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

LN2 = math.log(2.0)
"""ln 2: divide nats by it to get bits; also the upper bound of the JS divergence in nats."""

PROBABILITY_EPS = 1e-12
"""Floor applied to outputs that are already probabilities before taking their log."""

PROBABILITY_SUM_TOLERANCE = 1e-3
"""How far a row sum may be from 1 for `looks_like_probabilities` to accept it."""


def log_softmax(logits: npt.ArrayLike, axis: int = -1) -> FloatArray:
    """Numerically stable ``log(softmax(logits))`` in float64: ``x − max(x) − log Σ exp(x − max(x))``."""
    x = np.asarray(logits, dtype=np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    shifted = x - m
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def probabilities_to_log(probs: npt.ArrayLike, eps: float = PROBABILITY_EPS) -> FloatArray:
    """Log-probabilities of outputs that are already probabilities (e.g. a softmax inside the model).

    Each value is clamped at ``eps`` from below, each row renormalised to sum to 1 over the last axis,
    then the natural log is taken. The clamp keeps KL finite when a model assigns exactly 0 to a class.
    """
    p = np.maximum(np.asarray(probs, dtype=np.float64), eps)
    p = p / np.sum(p, axis=-1, keepdims=True)
    return np.log(p)


def looks_like_probabilities(outputs: npt.ArrayLike, tol: float = PROBABILITY_SUM_TOLERANCE) -> bool:
    """True when every finite row is non-negative and sums to 1 within ``tol`` (classes on the last axis).

    Rows holding NaN/Inf are ignored; with no finite row at all the answer is False.
    """
    x = np.asarray(outputs, dtype=np.float64)
    if x.ndim < 1 or x.shape[-1] < 1:
        return False
    rows = x.reshape(-1, x.shape[-1])
    rows = rows[np.all(np.isfinite(rows), axis=-1)]
    if rows.shape[0] == 0:
        return False
    return bool(np.all(rows >= 0.0) and np.all(np.abs(rows.sum(axis=-1) - 1.0) <= tol))


def _weighted_sum(weight: FloatArray, values: FloatArray) -> FloatArray:
    """``Σ weight · values`` over the last axis, where a zero weight contributes 0 (even against ±inf)."""
    terms = np.where(weight > 0.0, weight * np.where(weight > 0.0, values, 0.0), 0.0)
    return np.asarray(np.sum(terms, axis=-1), dtype=np.float64)


def _as_f64(x: npt.ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def kl(lp: npt.ArrayLike, lq: npt.ArrayLike) -> FloatArray:
    """Forward KL(P‖Q) = Σ P·(lp − lq) per sample, in nats; lower is better, 0 means identical.

    The default direction: the information lost when the compressed model (Q) stands in for the golden
    one (P). Not clamped: rounding may leave values of order −1e-16 for nearly identical inputs.
    """
    lp_, lq_ = _as_f64(lp), _as_f64(lq)
    return _weighted_sum(np.exp(lp_), lp_ - lq_)


def reverse_kl(lp: npt.ArrayLike, lq: npt.ArrayLike) -> FloatArray:
    """Reverse KL(Q‖P) = Σ Q·(lq − lp) per sample, in nats; lower is better."""
    return kl(lq, lp)


def _log_mixture(lp: FloatArray, lq: FloatArray) -> FloatArray:
    """log M with M = (P + Q)/2, computed as logaddexp(lp, lq) − ln 2; exactly lp where lp == lq."""
    with np.errstate(invalid="ignore"):
        mixed = np.logaddexp(lp, lq) - LN2
    return np.where(lp == lq, lp, mixed)


def js(lp: npt.ArrayLike, lq: npt.ArrayLike) -> FloatArray:
    """Jensen–Shannon divergence ½KL(P‖M) + ½KL(Q‖M), M = (P+Q)/2, per sample in nats.

    Symmetric, bounded by ln 2 (≈ 0.693 nats = 1 bit); lower is better. Computed in log space.
    """
    lp_, lq_ = _as_f64(lp), _as_f64(lq)
    lm = _log_mixture(lp_, lq_)
    return 0.5 * _weighted_sum(np.exp(lp_), lp_ - lm) + 0.5 * _weighted_sum(np.exp(lq_), lq_ - lm)


def cross_entropy(lp: npt.ArrayLike, lq: npt.ArrayLike) -> FloatArray:
    """Cross-entropy H(P, Q) = −Σ P·lq per sample, in nats (KL(P‖Q) = H(P, Q) − H(P)); lower is better."""
    lp_, lq_ = _as_f64(lp), _as_f64(lq)
    return -_weighted_sum(np.exp(lp_), lq_)


def entropy(lp: npt.ArrayLike) -> FloatArray:
    """Entropy H(P) = −Σ P·lp per sample, in nats (0 for a one-hot distribution, ln C for uniform)."""
    lp_ = _as_f64(lp)
    return -_weighted_sum(np.exp(lp_), lp_)


def total_variation(lp: npt.ArrayLike, lq: npt.ArrayLike) -> FloatArray:
    """Total variation distance ½ Σ |P − Q| per sample; unitless, in [0, 1]; lower is better."""
    p, q = np.exp(_as_f64(lp)), np.exp(_as_f64(lq))
    return np.asarray(0.5 * np.sum(np.abs(p - q), axis=-1), dtype=np.float64)


def to_bits(nats: npt.ArrayLike) -> FloatArray:
    """Convert nats to bits: bits = nats / ln 2."""
    return np.asarray(nats, dtype=np.float64) / LN2
