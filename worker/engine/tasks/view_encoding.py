"""Compact encodings of the pictures, label maps and waveforms the sample inspector shows (issue 30), and the
budget that bounds how many samples a task keeps.

Boxes and transcripts are a few kB a sample; pictures and waveforms are not, so the tasks that keep them
(segmentation, image outputs, signals) keep fewer samples and stop early when their document grows past
VIEW_BYTES_MAX, whichever comes first:
- label maps: a lossless PNG (8-bit grey, 16-bit when a class id exceeds 255), base64 in the JSON document;
- pictures: an 8-bit PNG over a stated value range (values outside it clipped, NaN drawn as the range's low
  end and counted), base64;
- waveforms: float32 little-endian bytes, base64 (NaN stored as 0 and ±inf clipped to ±float32 max, counted):
  the API encodes the WAV (16-bit PCM) on request, so the stored values stay the model's.
numpy and Pillow only (no runtime), imported by the task adapters.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import numpy as np

VIEW_BYTES_MAX = 8_000_000
"""Base64 bytes of one job's kept pictures / waveforms together: the document is one JSON result row that a
request reads one sample of by JSON path, and Postgres reads and parses the whole row for that: measured
43 ms a sample on a 9 MB row, 15 ms on 4.5 MB (one path; backend/services/task_samples.py). 8 MB keeps 16
samples of 256 x 256 RGB pictures or of 1 s, 16 kHz audio (the measured sizes in each task)."""


@dataclass
class ViewBudget:
    """How many more samples a task may keep: at most `max_samples`, and no new one once `bytes_max` is
    spent (the sample that crosses it is kept, so one huge sample still shows)."""

    max_samples: int
    bytes_max: int = VIEW_BYTES_MAX
    kept: int = 0
    spent: int = 0

    def room(self) -> bool:
        return self.kept < self.max_samples and self.spent < self.bytes_max

    def take(self, n_bytes: int) -> None:
        self.kept += 1
        self.spent += n_bytes


def png_b64(pixels: np.ndarray) -> str:
    """uint8 (H, W) → 8-bit grey, uint8 (H, W, 3) → RGB, uint16 (H, W) → 16-bit grey ("I;16")."""
    from PIL import Image

    buffer = io.BytesIO()
    image = Image.fromarray(np.ascontiguousarray(pixels))
    image.save(buffer, format="PNG", optimize=False, compress_level=6)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def label_map_png(labels: np.ndarray) -> str:
    """A (H, W) map of class ids as a base64 lossless PNG: 8-bit grey when every id is 0–255, else 16-bit
    (ids clipped to 0–65535: no dataset the project met has more classes)."""
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() > 255):
        return png_b64(np.clip(labels, 0, 65535).astype(np.uint16))
    return png_b64(labels.astype(np.uint8))


def to_uint8(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """The affine map of [low, high] onto 0–255, rounded half to even; values outside clipped, NaN → 0."""
    span = high - low if high > low else 1.0
    scaled = np.rint((np.asarray(x, dtype=np.float64) - low) * (255.0 / span))
    return np.clip(np.nan_to_num(scaled, nan=0.0, posinf=255.0, neginf=0.0), 0, 255).astype(np.uint8)


def picture_pixels(x: np.ndarray) -> tuple[np.ndarray, str]:
    """One output sample, (C, H, W) or (H, W), as the (H, W) or (H, W, 3) array a PNG holds, and what was
    drawn: "grey", "rgb", or "channel 0 of C" for channel counts other than 1 and 3 (4: its first three)."""
    x = np.asarray(x)
    if x.ndim == 2:
        return x, "grey"
    channels = x.shape[0]
    if channels == 1:
        return x[0], "grey"
    if channels in (3, 4):
        return np.moveaxis(x[:3], 0, -1), "rgb" if channels == 3 else "rgb (first 3 of 4 channels)"
    return x[0], f"channel 0 of {channels}"


def picture_png(x: np.ndarray, low: float, high: float) -> str:
    """One sample drawn by `picture_pixels` over [low, high] (`to_uint8`), as a base64 PNG."""
    pixels, _ = picture_pixels(x)
    return png_b64(to_uint8(pixels, low, high))


def waveform_b64(x: np.ndarray) -> tuple[str, int]:
    """A waveform as base64 float32 little-endian bytes (C-order of its shape), and how many values were not
    finite (NaN stored as 0, ±inf as ±float32 max)."""
    x = np.asarray(x, dtype=np.float64)
    bad = int((~np.isfinite(x)).sum())
    big = float(np.finfo(np.float32).max)
    safe = np.clip(np.nan_to_num(x, nan=0.0, posinf=big, neginf=-big), -big, big).astype("<f4")
    return base64.b64encode(safe.tobytes()).decode("ascii"), bad
