"""Decoders of the sample inspector's stored views (worker/engine/tasks/view_encoding.py), written with
Pillow and numpy directly so the tests read the stored bytes as any PNG / float32 reader would."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image


def png_pixels(b64: str) -> np.ndarray:
    """A base64 PNG (or a data: URL of one) decoded by Pillow to its pixel values."""
    raw = base64.b64decode(b64.split(",", 1)[1] if b64.startswith("data:") else b64)
    with Image.open(io.BytesIO(raw)) as image:
        assert image.format == "PNG"
        return np.array(image)


def float32_wave(b64: str, shape: list[int]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f4").reshape(shape)


def u8(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """numpy's own 8-bit drawing of values over [low, high]: scaled, rounded half to even, clipped."""
    return np.clip(np.rint((np.nan_to_num(x, nan=low) - low) / (high - low) * 255), 0, 255).astype(np.uint8)
