"""Fidelity of sequence outputs ``(N, T, D)`` (a transformer encoder's token embeddings), streamed.

Per token: cosine and SQNR (dB) between the golden and the compressed D-vector, over the tokens the
attention mask keeps (every token without a mask). Their mean, min and percentiles come from fixed
histograms, so memory does not grow with N·T: cosine is binned on −log10(1 − cos) (0.005 decades per
bin, so a percentile is within about 1.2 % of 1 − cos), SQNR on 0.02 dB bins from −60 to 200 dB; the
mean and min are exact.

Pooled sentence embeddings: per sample, the mean of the kept tokens ("mean", as sentence-transformers
pools) or the first token ("first", [CLS]); their cosine, and nearest-neighbour agreement within the
evaluated set: top-1 (the nearest other sample is the same in both spaces) and top-k overlap
(|kNN_golden ∩ kNN_compressed| / k). The pooled vectors are O(N·D) (the neighbour search needs them);
the similarity matrix is computed in row blocks, O(N·block).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Pooling = Literal["mean", "first"]

PERCENTILES = (1, 5, 25, 50, 75, 95, 99)
COSINE_DECADES = (-0.5, 12.0, 0.005)  # −log10(1 − cos): cos = −1 gives −0.30; 1 − 1e-12 gives 12
SQNR_DB = (-60.0, 200.0, 0.02)
TINY = 1e-30


@dataclass
class FixedHistogram:
    """Counts of values in equal bins over [lo, hi] (values outside go to the end bins), with exact
    count, sum and min; percentiles interpolate linearly inside a bin."""

    lo: float
    hi: float
    width: float
    counts: np.ndarray = field(init=False)
    n: int = 0
    total: float = 0.0
    minimum: float = math.inf

    def __post_init__(self) -> None:
        self.counts = np.zeros(round((self.hi - self.lo) / self.width), dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.float64).ravel()
        if not v.shape[0]:
            return
        self.n += int(v.shape[0])
        self.total += float(v.sum())
        self.minimum = min(self.minimum, float(v.min()))
        idx = np.clip(((v - self.lo) / self.width).astype(np.int64), 0, self.counts.shape[0] - 1)
        self.counts += np.bincount(idx, minlength=self.counts.shape[0])

    def percentile(self, q: float) -> float:
        """The q-th percentile (0–100), NaN when empty."""
        if self.n == 0:
            return math.nan
        target = q / 100.0 * self.n
        cum = np.cumsum(self.counts)
        b = int(np.searchsorted(cum, target, side="left"))
        b = min(b, self.counts.shape[0] - 1)
        before = float(cum[b - 1]) if b else 0.0
        inside = float(self.counts[b])
        frac = (target - before) / inside if inside else 0.0
        return self.lo + (b + min(max(frac, 0.0), 1.0)) * self.width


def token_cosine(g: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Cosine between golden and compressed vectors along the last axis (1 when both are zero, 0 when
    one is)."""
    dot = np.einsum("...d,...d->...", g, c)
    ng, nc = np.linalg.norm(g, axis=-1), np.linalg.norm(c, axis=-1)
    both_zero = (ng == 0) & (nc == 0)
    out = np.divide(dot, ng * nc, out=np.zeros_like(dot), where=(ng * nc) > 0)
    return np.asarray(np.where(both_zero, 1.0, out), dtype=np.float64)


def token_sqnr_db(g: np.ndarray, c: np.ndarray) -> np.ndarray:
    """10·log10(Σ g² / Σ (g − c)²) along the last axis; +inf where the vectors are equal."""
    signal = np.einsum("...d,...d->...", g, g)
    diff = g - c
    noise = np.einsum("...d,...d->...", diff, diff)
    with np.errstate(divide="ignore"):
        return np.asarray(10.0 * (np.log10(signal + TINY) - np.log10(noise)), dtype=np.float64)


def pool(x: np.ndarray, mask: np.ndarray | None, how: Pooling) -> np.ndarray:
    """Sentence embeddings ``(n, D)`` from token embeddings ``(n, T, D)``: the mean over the tokens the
    mask keeps (all tokens without a mask; a sample whose mask keeps none gives zeros), or the first token."""
    if how == "first":
        return np.asarray(x[:, 0, :], dtype=np.float64)
    if mask is None:
        return np.asarray(x.mean(axis=1), dtype=np.float64)
    m = mask.astype(np.float64)[:, :, None]
    kept = m.sum(axis=1)
    return np.asarray(np.divide((x * m).sum(axis=1), kept, out=np.zeros(x.shape[::2]), where=kept > 0))


def neighbours(x: npt.ArrayLike, k: int, block: int = 1024) -> np.ndarray:
    """The k nearest other rows of each row by cosine, nearest first (ties to the lower index), shape
    ``(N, min(k, N − 1))``; row blocks keep the similarity matrix at O(N·block)."""
    a = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    u = np.divide(a, norms, out=np.zeros_like(a), where=norms > 0)
    n = u.shape[0]
    k = max(0, min(int(k), n - 1))
    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, max(1, block)):
        stop = min(n, start + block)
        sims = u[start:stop] @ u.T
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        out[start:stop] = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return out


@dataclass
class SequenceAccumulator:
    """Token-level and pooled fidelity of one ``(N, T, D)`` output."""

    pooling: Pooling = "mean"
    top_k: int = 5
    block: int = 1024
    masked: bool | None = None
    n_samples: int = 0
    cosine_decades: FixedHistogram = field(default_factory=lambda: FixedHistogram(*COSINE_DECADES))
    cosine_exact: FixedHistogram = field(default_factory=lambda: FixedHistogram(-1.0, 1.0, 2.0))
    sqnr: FixedHistogram = field(default_factory=lambda: FixedHistogram(*SQNR_DB))
    n_tokens_exact: int = 0
    pooled: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))

    def update(self, g: np.ndarray, c: np.ndarray, mask: np.ndarray | None) -> None:
        """Fold in a batch of finite outputs ``(n, T, D)`` and their attention mask ``(n, T)`` (or None)."""
        if self.masked is None:
            self.masked = mask is not None
        g64, c64 = np.asarray(g, dtype=np.float64), np.asarray(c, dtype=np.float64)
        keep = np.ones(g64.shape[:2], dtype=np.bool_) if mask is None else np.asarray(mask) != 0
        cos = token_cosine(g64, c64)[keep]
        sq = token_sqnr_db(g64, c64)[keep]
        self.cosine_exact.add(cos)
        self.cosine_decades.add(-np.log10(np.maximum(1.0 - cos, 1e-12)))
        finite = np.isfinite(sq)
        self.n_tokens_exact += int((~finite).sum())
        self.sqnr.add(sq[finite])
        self.n_samples += int(g64.shape[0])
        self.pooled[0].append(pool(g64, mask, self.pooling))
        self.pooled[1].append(pool(c64, mask, self.pooling))

    def to_dict(self) -> dict[str, Any]:
        cos_pct = {f"p{q}": _num(1.0 - 10.0 ** (-self.cosine_decades.percentile(q))) for q in PERCENTILES}
        sq_pct = {f"p{q}": _num(self.sqnr.percentile(q)) for q in PERCENTILES}
        n_tok = self.cosine_exact.n
        out: dict[str, Any] = {
            "n_samples": self.n_samples,
            "n_tokens": n_tok,
            "masked": bool(self.masked),
            "token_cosine": {
                "mean": _num(self.cosine_exact.total / n_tok if n_tok else math.nan),
                "min": _num(self.cosine_exact.minimum if n_tok else math.nan),
                "percentiles": cos_pct,
            },
            "token_sqnr_db": {
                "mean": _num(self.sqnr.total / self.sqnr.n if self.sqnr.n else math.nan),
                "min": _num(self.sqnr.minimum if self.sqnr.n else math.nan),
                "percentiles": sq_pct,
                "n_exact": self.n_tokens_exact,
            },
            "pooled": self._pooled(),
        }
        return out

    def _pooled(self) -> dict[str, Any]:
        g = np.concatenate(self.pooled[0]) if self.pooled[0] else np.zeros((0, 0))
        c = np.concatenate(self.pooled[1]) if self.pooled[1] else np.zeros((0, 0))
        cos = token_cosine(g, c) if g.shape[0] else np.zeros(0)
        k = max(0, min(self.top_k, g.shape[0] - 1))
        top1 = overlap = math.nan
        if k >= 1:
            ng, nc = neighbours(g, k, self.block), neighbours(c, k, self.block)
            top1 = float(np.mean(ng[:, 0] == nc[:, 0]))
            shared = [np.intersect1d(a, b, assume_unique=True).shape[0] for a, b in zip(ng, nc, strict=True)]
            overlap = float(np.mean(shared) / k)
        return {
            "pooling": self.pooling,
            "cosine_mean": _num(float(cos.mean()) if cos.shape[0] else math.nan),
            "cosine_min": _num(float(cos.min()) if cos.shape[0] else math.nan),
            "neighbour_top1_agreement": _num(top1),
            "neighbour_k": k,
            "neighbour_topk_overlap": _num(overlap),
            "neighbour_metric": "cosine",
        }


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
