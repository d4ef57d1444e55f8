"""One array drawn as a small PNG: which sample shapes are pictures, and how they are scaled and sized.

Used by the dataset previews (backend/dataset_preview.py) and by the robustness slices' worst-sample
pictures (worker/jobs/robustness_images.py), so both draw an array the same way. numpy and Pillow only.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from backend.errors import Conflict

THUMBNAIL_MAX_SIDE = 128
MIN_IMAGE_SIDE = 4


def numeric(dtype: np.dtype[Any]) -> bool:
    """Whether values of this dtype can be drawn or summarised (bool, integers, floats)."""
    return dtype.kind in "biuf"


def image_layout(shape: Sequence[int], dtype: np.dtype[Any] | None = None) -> str | None:
    """'HW', 'CHW' or 'HWC' when one sample of this shape can be drawn as a picture, else None.

    (H, W), (1|3, H, W) and (H, W, 1|3), with H and W at least MIN_IMAGE_SIDE; channel-first is tried first.
    """
    if dtype is not None and not numeric(dtype):
        return None
    big = MIN_IMAGE_SIDE
    if len(shape) == 2 and shape[0] >= big and shape[1] >= big:
        return "HW"
    if len(shape) == 3:
        if shape[0] in (1, 3) and shape[1] >= big and shape[2] >= big:
            return "CHW"
        if shape[2] in (1, 3) and shape[0] >= big and shape[1] >= big:
            return "HWC"
    return None


def not_image_message(name: str, shape: Sequence[int]) -> str:
    return (
        f"array {name!r} has per-sample shape {tuple(shape)}, which is not an image; thumbnails are drawn "
        f"for (H, W), (1 or 3, H, W) and (H, W, 1 or 3) with H and W at least {MIN_IMAGE_SIDE}"
    )


# --- rendering ----------------------------------------------------------------------------------------


def png_bytes(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def fit_side(image: Any, max_side: int) -> Any:
    """Shrink to max_side (keeping the aspect ratio), or enlarge a tiny image by a whole factor with
    nearest-neighbour so that its pixels stay sharp (an 8x8 digit becomes 128x128)."""
    from PIL import Image

    side = max(image.width, image.height)
    if side > max_side:
        image = image.copy() if image.readonly else image
        image.thumbnail((max_side, max_side), Image.Resampling.BILINEAR)
        return image
    factor = max_side // side
    if factor > 1:
        return image.resize((image.width * factor, image.height * factor), Image.Resampling.NEAREST)
    return image


def array_thumbnail(
    sample: np.ndarray, max_side: int = THUMBNAIL_MAX_SIDE, *, value_range: tuple[float, float] | None = None
) -> bytes:
    """One image-like sample as a PNG, its finite values min-max scaled to 0..255 (NaN/inf drawn black,
    a constant sample black). value_range: scale (lo, hi) to 0..255 instead, values outside clipped; the
    robustness slices draw a corrupted sample on its clean sample's range, so that a brightness or contrast
    change shows (min-max scaling undoes any affine change)."""
    from PIL import Image

    layout = image_layout(sample.shape, sample.dtype)
    if layout is None:
        raise Conflict(not_image_message("sample", sample.shape))
    pixels = np.asarray(sample, dtype=np.float64)
    if layout == "CHW":
        pixels = pixels.transpose(1, 2, 0)
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    finite = np.isfinite(pixels)
    scaled = np.zeros(pixels.shape, dtype=np.uint8)
    if finite.any():
        lo, hi = value_range or (float(pixels[finite].min()), float(pixels[finite].max()))
        if hi > lo:
            unit = np.clip((pixels[finite] - lo) / (hi - lo), 0.0, 1.0)
            scaled[finite] = np.round(unit * 255.0).astype(np.uint8)
    image = Image.fromarray(np.ascontiguousarray(scaled), mode="RGB" if scaled.ndim == 3 else "L")
    return png_bytes(fit_side(image, max_side))
