"""The sample inspector's pictures of an image-output job (task "image", issue 30 item 6): for the first
IMAGE_VIEWS_MAX samples, the golden output, the compressed output and their absolute difference as PNGs,
with that sample's PSNR and SSIM against the golden picture.

Task "image" has no adapter (the per-output accumulators score it), so the comparison keeps these views
through `image_views_for`, a keeper with the same `sample_views` as an adapter that `ShowsSamples`.

Drawing (stated in each sample, so the page can say what a grey level means):
- both outputs over one value range [low, high] = [min(0, golden min), max(data_range, golden max)] of the
  golden sample's finite values: pictures in [0, data_range] are drawn as they are, and a golden output
  outside that range still fits; compressed values outside it are clipped and counted (`clipped`);
- the difference |golden − compressed|, the largest over the channels, amplified by `difference_gain`, a power
  of two (1 to 1024) that maps the 99.5th percentile of the differences to at most (high − low): white is
  (high − low) / gain or more, so a few speckles do not hide a blur spread everywhere. NaN differences are
  white and counted (`nonfinite`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.engine.tasks.image_output import psnr_ssim
from worker.engine.tasks.view_encoding import ViewBudget, picture_pixels, picture_png, png_b64, to_uint8

IMAGE_VIEWS_MAX = 16
"""Samples whose pictures are kept. Measured on scikit-image's astronaut at 256 x 256 RGB against a copy with
Gaussian noise of σ 0.01: golden 145 kB, compressed 172 kB, difference 79 kB of base64 PNG, 395 kB a sample
(6.3 MB for 16; drawing it took 88 ms); VIEW_BYTES_MAX stops bigger pictures sooner."""
GAIN_MAX = 1024
GAIN_PERCENTILE = 99.5


def value_range(golden: np.ndarray, data_range: float) -> tuple[float, float]:
    """[min(0, golden's finite min), max(data_range, golden's finite max)]."""
    finite = golden[np.isfinite(golden)]
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    high = max(float(data_range), float(finite.max())) if finite.size else float(data_range)
    return low, high


def difference_gain(difference: np.ndarray, span: float) -> int:
    """The largest power of two (1 to GAIN_MAX) whose multiple of the differences' 99.5th percentile is at
    most `span`."""
    finite = difference[np.isfinite(difference)]
    level = float(np.percentile(finite, GAIN_PERCENTILE)) if finite.size else 0.0
    if level <= 0:
        return GAIN_MAX
    return int(2 ** int(np.clip(np.floor(np.log2(span / level)), 0, np.log2(GAIN_MAX))))


def image_view(golden: np.ndarray, compressed: np.ndarray, data_range: float) -> dict[str, Any]:
    """One sample's three pictures (base64 PNGs) and how they were drawn; PSNR/SSIM are added by the keeper."""
    low, high = value_range(golden, data_range)
    g_pixels, layout = picture_pixels(golden)
    c_pixels, _ = picture_pixels(compressed)
    g64, c64 = np.asarray(g_pixels, dtype=np.float64), np.asarray(c_pixels, dtype=np.float64)
    difference = np.abs(g64 - c64)
    if difference.ndim == 3:
        difference = difference.max(axis=-1)
    difference = np.where(np.isnan(difference), np.inf, difference)  # NaN is drawn white
    gain = difference_gain(difference, high - low)
    outside = (c64 < low) | (c64 > high)
    return {
        "golden": picture_png(golden, low, high),
        "compressed": picture_png(compressed, low, high),
        "difference": png_b64(to_uint8(difference * gain, 0.0, high - low)),
        "value_range": [low, high],
        "difference_gain": gain,
        "layout": layout,
        "max_abs_difference": float(difference[np.isfinite(difference)].max(initial=0.0)),
        "clipped": int(outside.sum()),
        "nonfinite": int((~np.isfinite(g64)).sum() + (~np.isfinite(c64)).sum()),
    }


class ImageSampleViews:
    """Keeps the first samples' pictures of one image output while the comparison streams its batches."""

    name = "image"

    def __init__(self, output: str, data_range: float) -> None:
        self.output = output
        self.data_range = data_range
        self.kept: list[dict[str, Any]] = []
        self.budget = ViewBudget(IMAGE_VIEWS_MAX)

    def update(self, golden: np.ndarray, compressed: np.ndarray) -> None:
        if not self.budget.room():
            return
        n = min(len(golden), self.budget.max_samples - self.budget.kept)
        g, c = np.asarray(golden[:n], dtype=np.float64), np.asarray(compressed[:n], dtype=np.float64)
        finite = np.isfinite(g).reshape(n, -1).all(axis=1) & np.isfinite(c).reshape(n, -1).all(axis=1)
        psnr, ssim = np.full(n, np.nan), np.full(n, np.nan)
        if finite.any():
            psnr[finite], ssim[finite] = psnr_ssim(c[finite], g[finite], self.data_range)
        for i in range(n):
            if not self.budget.room():
                return
            view = image_view(g[i], c[i], self.data_range)
            # the task and what its answer needs in each entry: the API reads one entry, not the document
            view |= {"task": self.name, "output": self.output, "data_range": self.data_range}
            view["psnr_db"] = float(psnr[i]) if np.isfinite(psnr[i]) else None  # None: identical or NaN
            view["ssim"] = float(ssim[i]) if np.isfinite(ssim[i]) else None
            self.budget.take(sum(len(view[k]) for k in ("golden", "compressed", "difference")))
            self.kept.append(view)

    def sample_views(self) -> dict[str, Any]:
        return {
            "task": self.name,
            "output": self.output,
            "data_range": self.data_range,
            "n_samples": len(self.kept),
            "samples": list(self.kept),
        }
