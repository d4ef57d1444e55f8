"""Tensor-level compression math, in torch, shared by the torch and the ONNX backends.

Every function takes and returns float32 tensors and never modifies its input. The conventions
(quantization ranges, noise step, rank, channel grouping) are documented in `configs`.

Channels: a weight's output channels lie along `axis`; with `gates` > 1 (recurrent layers) the rows
along that axis are `gates` blocks of `units` rows each, and channel j is the set of rows
{g·units + j}: one hidden unit across all of its gates.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from worker.engine.compression.configs import ActivationQuant
from worker.engine.compression.entropy_calibration import entropy_threshold, symmetric_histogram

HISTOGRAM_BINS = 2048
"""Bins of the activation histograms used by percentile and MSE calibration."""

MSE_CANDIDATES = 128
"""Clipping ranges tried by MSE calibration: [lo·k/128, hi·k/128] for k = 1..128."""


# ----------------------------------------------------------------------------------------- weights


def _reduce_dims(t: torch.Tensor, axis: int) -> list[int]:
    return [d for d in range(t.dim()) if d != axis % t.dim()]


def weight_qparams(
    w: torch.Tensor, bits: int, symmetric: bool, per_channel: bool, axis: int = 0
) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """(scale float32, zero point int32, qmin, qmax); per channel the tensors have one entry per channel
    along `axis`, per tensor they are 0-d. A zero range gets scale 1 (the tensor is all zeros)."""
    x = w.detach().to(torch.float32)
    dims = _reduce_dims(x, axis) if per_channel and x.dim() > 0 else list(range(x.dim()))
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        qmin = -qmax
        amax = x.abs().amax(dim=dims) if dims else x.abs()
        scale = amax / qmax
        zero = torch.zeros_like(scale, dtype=torch.int32)
    else:
        qmin, qmax = 0, 2**bits - 1
        lo = torch.clamp(x.amin(dim=dims) if dims else x, max=0.0)
        hi = torch.clamp(x.amax(dim=dims) if dims else x, min=0.0)
        scale = (hi - lo) / (qmax - qmin)
        safe = torch.where(scale > 0, scale, torch.ones_like(scale))
        zero = torch.clamp(torch.round(-lo / safe), qmin, qmax).to(torch.int32)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale)).to(torch.float32)
    return scale, zero, qmin, qmax


def fake_quant_weight(
    w: torch.Tensor, bits: int, symmetric: bool, per_channel: bool, axis: int = 0
) -> torch.Tensor:
    """Quantize-dequantize with torch.fake_quantize_per_tensor_affine / _per_channel_affine."""
    x = w.detach().to(torch.float32).contiguous()
    if x.numel() == 0:
        return x.clone()
    scale, zero, qmin, qmax = weight_qparams(x, bits, symmetric, per_channel, axis)
    if per_channel and x.dim() > 0:
        return torch.fake_quantize_per_channel_affine(x, scale, zero, axis % x.dim(), qmin, qmax)
    return torch.fake_quantize_per_tensor_affine(x, float(scale), int(zero), qmin, qmax)


def fake_quant_weight_groups(
    w: torch.Tensor, bits: int, symmetric: bool, group_size: int, axis: int = 0
) -> torch.Tensor:
    """Quantize-dequantize in groups: the weights of each output channel (`axis`), flattened in their order
    (a Linear's inputs, a convolution's input channels × kernel), are cut into runs of `group_size`, each
    with its own scale (and zero point if asymmetric), by torch.fake_quantize_per_channel_affine over the
    groups as channels. A channel whose length is not a multiple of the group size ends in a shorter group."""
    x = w.detach().to(torch.float32).contiguous()
    if x.numel() == 0 or x.dim() == 0:
        return fake_quant_weight(x, bits, symmetric, per_channel=False)
    moved = x.movedim(axis % x.dim(), 0)
    rows = moved.reshape(moved.shape[0], -1)
    length = rows.shape[1]
    padded = -(-length // group_size) * group_size
    edge = rows[:, -1:].expand(-1, padded - length)  # padding copies the last weight: it moves no range
    groups = torch.cat([rows, edge], dim=1).reshape(-1, group_size)
    scale, zero, qmin, qmax = weight_qparams(groups, bits, symmetric, per_channel=True, axis=0)
    quantized = torch.fake_quantize_per_channel_affine(groups, scale, zero, 0, qmin, qmax)
    back = quantized.reshape(rows.shape[0], padded)[:, :length].reshape(moved.shape)
    return back.movedim(0, axis % x.dim()).contiguous()


def noise_step(w: torch.Tensor, bits: int) -> float:
    """Δ = max|w| / (2^(b−1)−1): the step of symmetric per-tensor b-bit quantization of `w`."""
    amax = float(w.detach().abs().max()) if w.numel() else 0.0
    return amax / (2 ** (bits - 1) - 1)


def tensor_seed(seed: int, key: str) -> int:
    """A per-tensor seed: the config's seed mixed with a CRC of the tensor's name (stable across runs)."""
    return (seed * 1_000_003 + zlib.crc32(key.encode())) % (2**63 - 1)


def inject_noise(w: torch.Tensor, bits: int, seed: int, key: str) -> torch.Tensor:
    """w + U(−Δ/2, Δ/2) noise, Δ = `noise_step(w, bits)`: noise power Δ²/12 (see configs.NoiseInjection)."""
    x = w.detach().to(torch.float32)
    step = noise_step(x, bits)
    generator = torch.Generator().manual_seed(tensor_seed(seed, key))
    noise = (torch.rand(x.shape, generator=generator, dtype=torch.float64) - 0.5) * step
    return (x.to(torch.float64) + noise).to(torch.float32)


def magnitude_prune(w: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Zero the round(sparsity·n) smallest |w| (the same selection as prune.l1_unstructured)."""
    x = w.detach().to(torch.float32).clone()
    k = round(sparsity * x.numel())
    if k == 0:
        return x
    flat = x.view(-1)
    indices = torch.topk(flat.abs(), k=k, largest=False).indices
    flat[indices] = 0.0
    return x


def low_rank(w: torch.Tensor, rank_ratio: float, axis: int = 0) -> tuple[torch.Tensor, int]:
    """Best rank-r approximation (truncated SVD, float64) of `w` reshaped to out × rest; returns it and r."""
    x = w.detach().to(torch.float32)
    moved = torch.movedim(x, axis, 0)
    matrix = moved.reshape(moved.shape[0], -1).to(torch.float64)
    full = min(matrix.shape)
    rank = max(1, round(rank_ratio * full))
    if rank >= full:
        return x.clone(), full
    u, s, vh = torch.linalg.svd(matrix, full_matrices=False)
    approx = (u[:, :rank] * s[:rank]) @ vh[:rank]
    return torch.movedim(approx.reshape(moved.shape), 0, axis).to(torch.float32).contiguous(), rank


def float_cast(w: torch.Tensor, dtype: str) -> torch.Tensor:
    """Round trip float32 → fp16 / bf16 → float32."""
    target = torch.float16 if dtype == "fp16" else torch.bfloat16
    return w.detach().to(torch.float32).to(target).to(torch.float32)


# ---------------------------------------------------------------------------------------- channels


def channel_rows(t: torch.Tensor, axis: int, gates: int) -> torch.Tensor:
    """View of `t` as (units, everything else): row j holds every element of channel j."""
    moved = torch.movedim(t, axis, 0)
    rows = moved.shape[0]
    if rows % gates:
        raise ValueError(f"{rows} rows do not split into {gates} gates")
    units = rows // gates
    return moved.reshape(gates, units, -1).transpose(0, 1).reshape(units, -1)


def channel_count(shape: Sequence[int], axis: int, gates: int) -> int:
    return int(shape[axis]) // gates


def channel_scores(members: Sequence[tuple[torch.Tensor, int, int]], norm: str) -> torch.Tensor:
    """L1 or L2 norm of each channel over all `members` (tensor, axis, gates) jointly, float64."""
    total: torch.Tensor | None = None
    for tensor, axis, gates in members:
        rows = channel_rows(tensor.detach().to(torch.float64), axis, gates)
        part = rows.abs().sum(dim=1) if norm == "l1" else (rows * rows).sum(dim=1)
        total = part if total is None else total + part
    if total is None:
        raise ValueError("a channel group needs at least one tensor")
    return total if norm == "l1" else torch.sqrt(total)


def lowest_channels(scores: torch.Tensor, sparsity: float) -> list[int]:
    """The round(sparsity·C) channels with the lowest score (ties: lower index first)."""
    count = round(sparsity * scores.numel())
    order = sorted(range(scores.numel()), key=lambda j: (float(scores[j]), j))
    return sorted(order[:count])


def zero_channels(t: torch.Tensor, axis: int, gates: int, channels: Sequence[int]) -> torch.Tensor:
    """A copy of `t` with every row of the given channels (all gates) set to 0."""
    x = t.detach().to(torch.float32).clone()
    if not channels:
        return x
    units = x.shape[axis] // gates
    rows = [g * units + j for g in range(gates) for j in channels]
    index = torch.tensor(rows, dtype=torch.long)
    x.index_fill_(axis, index, 0.0)
    return x


# ------------------------------------------------------------------------------------- activations


@dataclass
class ActivationStats:
    """Streaming range (and, on a second pass, histogram) of one activation tensor."""

    lo: float = math.inf
    hi: float = -math.inf
    count: int = 0
    histogram: np.ndarray | None = None
    symmetric: np.ndarray | None = None
    """Entropy calibration's histogram over [−max|x|, max|x|] (entropy_calibration.ENTROPY_BINS bins)."""
    symmetric_edges: np.ndarray | None = None

    def update_range(self, x: np.ndarray) -> None:
        values = x[np.isfinite(x)]
        if values.size:
            self.lo = min(self.lo, float(values.min()))
            self.hi = max(self.hi, float(values.max()))
            self.count += int(values.size)

    def update_histogram(self, x: np.ndarray) -> None:
        """Second pass: bins over [lo, hi] of the first pass."""
        if not self.count:
            return
        finite = x[np.isfinite(x)]
        values = finite.astype(np.float64, copy=False)
        counts, _ = np.histogram(values, bins=HISTOGRAM_BINS, range=self._range())
        self.histogram = counts if self.histogram is None else self.histogram + counts
        threshold = max(abs(self.lo), abs(self.hi))
        if threshold > 0:
            sym, edges = symmetric_histogram(finite, threshold)
            self.symmetric = sym if self.symmetric is None else self.symmetric + sym
            self.symmetric_edges = edges

    def _range(self) -> tuple[float, float]:
        return (self.lo, self.hi) if self.hi > self.lo else (self.lo - 0.5, self.lo + 0.5)

    def edges(self) -> np.ndarray:
        lo, hi = self._range()
        return np.linspace(lo, hi, HISTOGRAM_BINS + 1)


@dataclass(frozen=True)
class ActivationQParams:
    """Asymmetric unsigned per-tensor parameters: q = clamp(round(x/scale) + zero, 0, qmax)."""

    scale: float
    zero_point: int
    qmax: int
    lo: float
    hi: float

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_floating_point():
            return x
        y = torch.fake_quantize_per_tensor_affine(
            x.to(torch.float32), self.scale, self.zero_point, 0, self.qmax
        )
        return y.to(x.dtype)


def _qparams_for_range(lo: float, hi: float, bits: int) -> ActivationQParams:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    qmax = 2**bits - 1
    scale = float(np.float32((hi - lo) / qmax)) if hi > lo else 1.0
    if scale <= 0.0:
        scale = 1.0
    zero = int(min(max(round(-lo / scale), 0), qmax))
    return ActivationQParams(scale=scale, zero_point=zero, qmax=qmax, lo=lo, hi=hi)


def _percentile_range(stats: ActivationStats, p: float) -> tuple[float, float]:
    hist = stats.histogram
    if hist is None or hist.sum() == 0:
        return stats.lo, stats.hi
    edges = stats.edges()
    cdf = np.concatenate([[0.0], np.cumsum(hist, dtype=np.float64)]) / float(hist.sum())
    lo = float(np.interp((100.0 - p) / 100.0, cdf, edges))
    hi = float(np.interp(p / 100.0, cdf, edges))
    return lo, hi


def _mse_range(stats: ActivationStats, bits: int) -> tuple[float, float]:
    """The clipping range [lo·k/N, hi·k/N] (k = 1..N) with the least quantization MSE over the
    histogram, each bin represented by its centre (ties: the widest range)."""
    hist = stats.histogram
    lo0, hi0 = min(stats.lo, 0.0), max(stats.hi, 0.0)
    if hist is None or hist.sum() == 0 or hi0 <= lo0:
        return stats.lo, stats.hi
    edges = stats.edges()
    centres = (edges[:-1] + edges[1:]) / 2.0
    weights = hist.astype(np.float64)
    qmax = 2**bits - 1
    best: tuple[float, float, float] | None = None
    for k in range(MSE_CANDIDATES, 0, -1):
        lo, hi = lo0 * k / MSE_CANDIDATES, hi0 * k / MSE_CANDIDATES
        scale = (hi - lo) / qmax
        zero = min(max(round(-lo / scale), 0), qmax)
        q = np.clip(np.round(centres / scale) + zero, 0, qmax)
        err = float(np.sum(weights * (centres - (q - zero) * scale) ** 2))
        if best is None or err < best[0]:
            best = (err, lo, hi)
    assert best is not None
    return best[1], best[2]


def activation_qparams(stats: ActivationStats, config: ActivationQuant) -> ActivationQParams:
    """Range by the config's calibration method, widened to include 0, then scale and zero point."""
    if not stats.count:
        return _qparams_for_range(0.0, 0.0, config.bits)
    if config.calibration == "percentile":
        assert config.percentile is not None
        lo, hi = _percentile_range(stats, config.percentile)
    elif config.calibration == "mse":
        lo, hi = _mse_range(stats, config.bits)
    elif config.calibration == "entropy":
        if stats.symmetric is None or stats.symmetric_edges is None:
            lo, hi = stats.lo, stats.hi
        else:
            levels = 2**config.bits - 1
            lo, hi = entropy_threshold(stats.symmetric, stats.symmetric_edges, levels, stats.lo, stats.hi)
    else:
        lo, hi = stats.lo, stats.hi
    return _qparams_for_range(lo, hi, config.bits)
