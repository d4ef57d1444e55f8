"""Turn images in a zip archive into one input array, following a preprocessing recipe.

Pillow and numpy only (no torch), so the jobs decode here and the API could as well; the worker is the one
that does, since decoding a whole dataset is a job's work, not a request's."""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from dataset_readers.errors import DatasetFormatError


def preprocess_image(
    data: IO[bytes],
    size: tuple[int, int],
    mode: str,
    scale: float,
    mean: Sequence[float],
    std: Sequence[float],
    layout: str,
) -> np.ndarray:
    """One image -> float32 array (C, H, W) or (H, W, C): convert, resize (bilinear), scale, normalise."""
    from PIL import Image

    with Image.open(data) as img:
        height, width = size
        pixels = np.asarray(
            img.convert(mode).resize((width, height), Image.Resampling.BILINEAR), dtype=np.float32
        )
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    x = (pixels * np.float32(scale) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1) if layout == "NCHW" else x, dtype=np.float32)


def images_to_array(
    archive: Path,
    members: Sequence[str],
    size: tuple[int, int],
    mode: str = "RGB",
    scale: float = 1 / 255,
    mean: Sequence[float] = (0.0,),
    std: Sequence[float] = (1.0,),
    layout: str = "NCHW",
) -> np.ndarray:
    """Every listed image of the archive, in order, as one float32 array (N, C, H, W) or (N, H, W, C)."""
    arrays = []
    with zipfile.ZipFile(archive) as zf:
        for name in members:
            try:
                with zf.open(name) as f:
                    arrays.append(preprocess_image(f, size, mode, scale, mean, std, layout))
            except (OSError, ValueError, KeyError) as exc:
                raise DatasetFormatError(f"image {name!r} could not be decoded: {exc}") from exc
    return np.stack(arrays)
