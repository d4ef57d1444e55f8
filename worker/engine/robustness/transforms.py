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
and the second more than 4. Other float arrays get only the slices marked ``images_only=False``
(Gaussian noise); integer arrays (token ids, masks) are never changed.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SEVERITIES = (1, 2, 3)
"""Named severities: 1 mild, 2 moderate, 3 severe."""

SEVERITY_NAMES = {1: "mild", 2: "moderate", 3: "severe"}


@dataclass(frozen=True)
class ArrayStats:
    """Mean and standard deviation of one dataset array over all its values (float64)."""

    mean: float
    std: float


@dataclass(frozen=True)
class SliceSpec:
    """One corruption: its name, what its per-severity value means, and whether it needs images."""

    name: str
    parameter: str
    values: tuple[float, float, float]
    images_only: bool


SLICES: dict[str, SliceSpec] = {
    spec.name: spec
    for spec in (
        SliceSpec("gaussian_noise", "noise std / data std (SNR 20, 12, 6 dB)", (0.1, 0.25, 0.5), False),
        SliceSpec("brightness", "shift in data stds", (0.25, 0.5, 1.0), True),
        SliceSpec("contrast", "contrast factor around the data mean", (0.75, 0.5, 0.25), True),
        SliceSpec("gaussian_blur", "blur sigma in pixels", (0.5, 1.0, 2.0), True),
        SliceSpec(
            "occlusion", "patch side / image side (patch filled with the data mean)", (0.125, 0.25, 0.5), True
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
    """Whether slice `name` changes this dataset array."""
    if not np.issubdtype(array.dtype, np.floating):
        return False
    return is_image(array) or not SLICES[name].images_only


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


RngFor = Callable[[int], np.random.Generator]
Transform = Callable[[np.ndarray, np.ndarray, float, ArrayStats, RngFor], np.ndarray]

TRANSFORMS: dict[str, Transform] = {
    "gaussian_noise": _noise,
    "brightness": _brightness,
    "contrast": _contrast,
    "gaussian_blur": _blur,
    "occlusion": _occlusion,
}


def corrupt(
    name: str, severity: int, x: np.ndarray, indices: np.ndarray, stats: ArrayStats, seed: int = 0
) -> np.ndarray:
    """The batch `x` (dataset rows `indices`) corrupted by slice `name` at `severity`, in x's dtype.
    Arrays the slice does not apply to (see `applies_to`) come back unchanged."""
    if name not in SLICES:
        raise ValueError(f"unknown robustness slice {name!r}; known: {', '.join(SLICES)}")
    if severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {SEVERITIES}, got {severity}")
    if not applies_to(name, x):
        return x
    value = SLICES[name].values[severity - 1]

    def draw(block: int) -> np.random.Generator:
        return block_rng(seed, name, severity, block)

    return TRANSFORMS[name](np.asarray(x), np.asarray(indices), value, stats, draw).astype(x.dtype)


def array_stats(array: np.ndarray, chunk: int = 4096) -> ArrayStats:
    """Mean and std of every value of `array`, streamed over chunks of rows (it may be memory-mapped)."""
    total, total_sq, count = 0.0, 0.0, 0
    for start in range(0, len(array), chunk):
        part = np.asarray(array[start : start + chunk], dtype=np.float64)
        part = part[np.isfinite(part)]
        total += float(part.sum())
        total_sq += float(np.square(part).sum())
        count += part.size
    if count == 0:
        return ArrayStats(0.0, 1.0)
    mean = total / count
    std = math.sqrt(max(total_sq / count - mean * mean, 0.0))
    return ArrayStats(mean, std if std > 0 else 1.0)
