"""Deterministic, seeded corruptions of input batches at three named severities (seed 003: noise and
OOD-style shifts).

Every transform maps a batch of samples, with their dataset indexes, to a corrupted copy. The random
draws are made per block of `block_rows` consecutive dataset rows (a fixed number for a given sample
shape, ~2^20 values), from a generator seeded by (seed, slice, severity, block index); a sample takes
its row of its block's draws. So a sample's corruption depends on its index only, not on the batch it
falls in, the batch size or the chunking: reruns, and any re-cut of the dataset, give identical inputs.
(One generator per sample gave the same guarantee, but creating it cost ~17 µs a sample: 0.4x the two
digits CNNs' forward passes in bench/bench_robustness.py.)

Strengths are relative to the data where a scale is needed: the dataset's mean and standard deviation of
each array (`ArrayStats`, one streamed pass), so the same severity means the same thing for pixels in
[0, 1] and for normalised (ImageNet mean/std) inputs.

Image arrays are float arrays of rank 4, laid out NCHW, or NHWC when the last axis has at most 4 entries
and the second more than 4. Each slice has a target (`SliceSpec.target`): "float" slices (Gaussian
noise) change every float array, "image" slices only images, "tokens" (token replacement, tokens.py) only
token-id arrays; "gradient" slices (FGSM, PGD: adversarial.py) need the golden model and are made in
run.py, not here. Masks and other integer arrays are never changed.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from worker.engine.robustness.jpeg import jpeg_images
from worker.engine.robustness.tokens import TokenStats, draw_block, eligible

SEVERITIES = (1, 2, 3)
"""Named severities: 1 mild, 2 moderate, 3 severe."""

SEVERITY_NAMES = {1: "mild", 2: "moderate", 3: "severe"}


@dataclass(frozen=True)
class ArrayStats:
    """Mean, standard deviation, minimum and maximum of one dataset array's finite values (float64).
    low/high: the value range JPEG maps onto 8 bits and adversarial inputs are clipped to."""

    mean: float
    std: float
    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True)
class SliceSpec:
    """One corruption: its name, what its per-severity value means, and which arrays it changes."""

    name: str
    parameter: str
    values: tuple[float, float, float]
    target: SliceTarget


SLICES: dict[str, SliceSpec] = {
    spec.name: spec
    for spec in (
        SliceSpec("gaussian_noise", "noise std / data std (SNR 20, 12, 6 dB)", (0.1, 0.25, 0.5), "float"),
        SliceSpec("brightness", "shift in data stds", (0.25, 0.5, 1.0), "image"),
        SliceSpec("contrast", "contrast factor around the data mean", (0.75, 0.5, 0.25), "image"),
        SliceSpec("gaussian_blur", "blur sigma in pixels", (0.5, 1.0, 2.0), "image"),
        SliceSpec(
            "occlusion",
            "patch side / image side (patch filled with the data mean)",
            (0.125, 0.25, 0.5),
            "image",
        ),
        # ImageNet-C's JPEG severities 1, 3, 5 (Hendrycks & Dietterich 2019). Milder qualities (90/50/20)
        # did not order the digits int8 pair's KL (1.10, 1.01, 1.24 x clean): below its own int8 noise.
        SliceSpec("jpeg", "JPEG quality (Pillow, 8-bit over the data's range)", (25.0, 15.0, 7.0), "image"),
        SliceSpec(
            "token_replacement", "share of attended, non-special tokens redrawn", (0.05, 0.15, 0.3), "tokens"
        ),
        SliceSpec("fgsm", "L∞ ε / data range (FGSM on the golden model)", (0.01, 0.03, 0.1), "gradient"),
        SliceSpec(
            "pgd", "L∞ ε / data range (PGD, 10 steps, on the golden model)", (0.01, 0.03, 0.1), "gradient"
        ),
    )
}
"""The slices, in the order they are run and shown."""

BLUR_TRUNCATE = 4.0
"""Gaussian kernel radius in sigmas (scipy.ndimage's default, so the two agree)."""


def is_image(array: np.ndarray) -> bool:
    return array.ndim == 4 and np.issubdtype(array.dtype, np.floating)


def spatial_axes(shape: tuple[int, ...]) -> tuple[int, int]:
    """The (H, W) axes of a rank-4 batch: (2, 3) for NCHW, (1, 2) for NHWC."""
    return (1, 2) if shape[3] <= 4 < shape[1] else (2, 3)


def applies_to(name: str, array: np.ndarray) -> bool:
    """Whether the float slice `name` changes this float dataset array (token and gradient slices are
    decided in run.py: they need the array's name or the golden model)."""
    if SLICES[name].target not in ("float", "image") or not np.issubdtype(array.dtype, np.floating):
        return False
    return is_image(array) or SLICES[name].target == "float"


BLOCK_VALUES = 2**20
"""Values drawn per block of rows (8 MiB of float64 noise at most)."""


def block_rows(sample_shape: tuple[int, ...]) -> int:
    """Dataset rows per block of draws, for samples of this shape."""
    return max(1, BLOCK_VALUES // max(1, math.prod(sample_shape)))


def block_rng(seed: int, name: str, severity: int, block: int) -> np.random.Generator:
    """The generator of one block's draws (stable across runs, Python versions and chunkings)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode()), severity, int(block)])


def per_row_draws(
    indices: np.ndarray,
    rows: int,
    draw_block: Callable[[np.random.Generator, int], np.ndarray],
    rng_for: RngFor,
) -> np.ndarray:
    """draw_block(block's generator, rows)[index % rows] for each index, in the order of `indices`."""
    blocks = indices // rows
    out: np.ndarray | None = None
    for block in np.unique(blocks):
        where = blocks == block
        drawn = draw_block(rng_for(int(block)), rows)
        if out is None:
            out = np.empty((len(indices), *drawn.shape[1:]), dtype=drawn.dtype)
        out[where] = drawn[indices[where] % rows]
    assert out is not None
    return out


def gaussian_kernel(sigma: float) -> np.ndarray:
    radius = int(BLUR_TRUNCATE * sigma + 0.5)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    return k / k.sum()


def _convolve_axis(x: np.ndarray, kernel: np.ndarray, axis: int) -> np.ndarray:
    """1-D correlation along `axis` with half-sample symmetric edges (scipy.ndimage mode "reflect")."""
    radius = len(kernel) // 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (radius, radius)
    padded = np.pad(x, pad, mode="symmetric")
    length = x.shape[axis]
    out = np.zeros_like(x)
    for k, weight in enumerate(kernel):
        out += weight * np.take(padded, np.arange(k, k + length), axis=axis)
    return out


def _noise(x: np.ndarray, idx: np.ndarray, value: float, stats: ArrayStats, draw: RngFor) -> np.ndarray:
    shape = x.shape[1:]
    noise = per_row_draws(idx, block_rows(shape), lambda rng, rows: rng.standard_normal((rows, *shape)), draw)
    return x.astype(np.float64) + noise * (value * stats.std)


def _brightness(x: np.ndarray, idx: np.ndarray, value: float, stats: ArrayStats, draw: RngFor) -> np.ndarray:
    return x.astype(np.float64) + value * stats.std


def _contrast(x: np.ndarray, idx: np.ndarray, value: float, stats: ArrayStats, draw: RngFor) -> np.ndarray:
    return stats.mean + value * (x.astype(np.float64) - stats.mean)


def _blur(x: np.ndarray, idx: np.ndarray, value: float, stats: ArrayStats, draw: RngFor) -> np.ndarray:
    kernel = gaussian_kernel(value)
    h_axis, w_axis = spatial_axes(x.shape)
    return _convolve_axis(_convolve_axis(x.astype(np.float64), kernel, h_axis), kernel, w_axis)


def occlusion_side(shape: tuple[int, ...], value: float) -> int:
    """The side of the square patch: round(value · min(H, W)), at least 1."""
    h_axis, w_axis = spatial_axes(shape)
    h, w = shape[h_axis], shape[w_axis]
    return max(1, min(h, w, round(value * min(h, w))))


def occlusion_corners(shape: tuple[int, ...], side: int, rng: np.random.Generator, rows: int) -> np.ndarray:
    """(top, left) of the patches of a block of rows: all the tops drawn, then all the lefts."""
    h_axis, w_axis = spatial_axes(shape)
    tops = rng.integers(0, shape[h_axis] - side + 1, size=rows)
    lefts = rng.integers(0, shape[w_axis] - side + 1, size=rows)
    return np.stack([tops, lefts], axis=1)


def _occlusion(x: np.ndarray, idx: np.ndarray, value: float, stats: ArrayStats, draw: RngFor) -> np.ndarray:
    out = x.astype(np.float64)
    h_axis, _ = spatial_axes(x.shape)
    side = occlusion_side(x.shape, value)
    rows = block_rows(x.shape[1:])
    corners = per_row_draws(idx, rows, lambda rng, n: occlusion_corners(x.shape, side, rng, n), draw)
    for i, (top, left) in enumerate(corners.tolist()):
        if h_axis == 2:
            out[i, :, top : top + side, left : left + side] = stats.mean
        else:
            out[i, top : top + side, left : left + side, :] = stats.mean
    return out


def _jpeg(x: np.ndarray, idx: np.ndarray, value: float, stats: ArrayStats, draw: RngFor) -> np.ndarray:
    channels_last = spatial_axes(x.shape) == (1, 2)
    return jpeg_images(x, int(value), stats.low, stats.high, channels_last)


def replace_tokens(
    ids: np.ndarray,
    indices: np.ndarray,
    rate: float,
    stats: TokenStats,
    mask: np.ndarray | None,
    draw: RngFor,
) -> np.ndarray:
    """Token replacement (tokens.py): eligible positions whose uniform draw is below `rate` take
    pool[their pool-index draw]."""
    if stats.pool.size == 0:
        return ids
    length = ids.shape[1]
    rows = block_rows((2, length))
    draws = per_row_draws(indices, rows, lambda rng, n: draw_block(rng, n, length, stats.pool.size), draw)
    chosen = eligible(ids, mask, stats) & (draws[:, 0] < rate)
    return np.where(chosen, stats.pool[draws[:, 1].astype(np.int64)], ids)


RngFor = Callable[[int], np.random.Generator]
SliceTarget = Literal["float", "image", "tokens", "gradient"]
Transform = Callable[[np.ndarray, np.ndarray, float, ArrayStats, RngFor], np.ndarray]

TRANSFORMS: dict[str, Transform] = {
    "gaussian_noise": _noise,
    "brightness": _brightness,
    "contrast": _contrast,
    "gaussian_blur": _blur,
    "occlusion": _occlusion,
    "jpeg": _jpeg,
}


def corrupt(
    name: str,
    severity: int,
    x: np.ndarray,
    indices: np.ndarray,
    stats: ArrayStats | TokenStats,
    seed: int = 0,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """The batch `x` (dataset rows `indices`) corrupted by slice `name` at `severity`, in x's dtype.
    Token replacement takes the array's TokenStats and the batch's attention mask (None: no padding);
    the other slices its ArrayStats. Arrays the slice does not apply to come back unchanged."""
    if name not in SLICES:
        raise ValueError(f"unknown robustness slice {name!r}; known: {', '.join(SLICES)}")
    if severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {SEVERITIES}, got {severity}")
    spec = SLICES[name]
    if spec.target == "gradient":
        raise ValueError(f"slice {name!r} is crafted against the golden model (robustness/adversarial.py)")
    value = spec.values[severity - 1]

    def draw(block: int) -> np.random.Generator:
        return block_rng(seed, name, severity, block)

    if isinstance(stats, TokenStats):
        if spec.target != "tokens" or np.issubdtype(x.dtype, np.floating):
            return x
        return replace_tokens(np.asarray(x), np.asarray(indices), value, stats, mask, draw).astype(x.dtype)
    if not applies_to(name, x):
        return x
    return TRANSFORMS[name](np.asarray(x), np.asarray(indices), value, stats, draw).astype(x.dtype)


def array_stats(array: np.ndarray, chunk: int = 4096) -> ArrayStats:
    """Mean and std of every value of `array`, streamed over chunks of rows (it may be memory-mapped)."""
    total, total_sq, count = 0.0, 0.0, 0
    low, high = math.inf, -math.inf
    for start in range(0, len(array), chunk):
        part = np.asarray(array[start : start + chunk], dtype=np.float64)
        part = part[np.isfinite(part)]
        total += float(part.sum())
        total_sq += float(np.square(part).sum())
        count += part.size
        if part.size:
            low, high = min(low, float(part.min())), max(high, float(part.max()))
    if count == 0:
        return ArrayStats(0.0, 1.0)
    mean = total / count
    std = math.sqrt(max(total_sq / count - mean * mean, 0.0))
    return ArrayStats(mean, std if std > 0 else 1.0, low, high if high > low else low + 1.0)
