"""JPEG re-encoding of float images (seed 003: compression artefacts), one Pillow round trip per image.

The models see float arrays, JPEG stores 8-bit pixels, so each image goes through the affine map of the
dataset's own value range [low, high] (`ArrayStats.low/high`, the finite minimum and maximum of the
array) onto [0, 255]:

    u8 = round(255 · (x − low) / (high − low)), clipped to [0, 255]
    x' = low + (high − low) · u8' / 255        (u8' = the decoded JPEG)

The inverse map is exact, so without the JPEG step a value comes back within half a step,
(high − low) / 510, of where it was (0.002 on [0, 1] pixels): the round trip changes the input only by
the 8-bit rounding every real image pipeline applies, plus the JPEG loss. Using the data's own range, not
[0, 1], keeps the map right for ImageNet-normalised inputs (about −2.1 to 2.6) as for raw pixels.

Channels: 1 → Pillow mode "L", 3 → "RGB" (4:2:0 chroma subsampling fixed explicitly, Pillow's default
for quality < 95, so the result does not depend on Pillow's choice); any other channel count is encoded
channel by channel as "L" images. Encoding is deterministic (libjpeg's baseline DCT, no random draws).
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

SUBSAMPLING_420 = 2
"""Pillow's code for 4:2:0 chroma subsampling (only used for RGB)."""


def to_uint8(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """The affine map of [low, high] onto [0, 255], rounded half to even and clipped."""
    span = high - low if high > low else 1.0
    return np.clip(np.rint((x.astype(np.float64) - low) * (255.0 / span)), 0, 255).astype(np.uint8)


def from_uint8(u8: np.ndarray, low: float, high: float) -> np.ndarray:
    """The inverse of `to_uint8`'s map, in float64."""
    span = high - low if high > low else 1.0
    return low + u8.astype(np.float64) * (span / 255.0)


def jpeg_round_trip(pixels: np.ndarray, quality: int) -> np.ndarray:
    """One uint8 image, (H, W) or (H, W, 3), encoded as JPEG at `quality` and decoded."""
    mode = "RGB" if pixels.ndim == 3 else "L"
    buffer = io.BytesIO()
    options = {"subsampling": SUBSAMPLING_420} if mode == "RGB" else {}
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=quality, **options)
    buffer.seek(0)
    with Image.open(buffer) as decoded:
        return np.asarray(decoded.convert(mode))


def jpeg_images(x: np.ndarray, quality: int, low: float, high: float, channels_last: bool) -> np.ndarray:
    """A batch of float images (NCHW, or NHWC when `channels_last`) re-encoded as JPEG, in float64."""
    nhwc = x if channels_last else np.moveaxis(x, 1, -1)
    u8 = to_uint8(nhwc, low, high)
    out = np.empty_like(u8)
    for i in range(len(u8)):
        if u8.shape[-1] == 3:
            out[i] = jpeg_round_trip(np.ascontiguousarray(u8[i]), quality)
        else:
            for c in range(u8.shape[-1]):
                out[i, ..., c] = jpeg_round_trip(np.ascontiguousarray(u8[i, ..., c]), quality)
    back = from_uint8(out, low, high)
    return back if channels_last else np.moveaxis(back, -1, 1)
