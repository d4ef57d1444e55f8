"""The image-output task (issue 30, item 6): super-resolution, denoising, decoders — outputs that are
pictures, scored by PSNR and SSIM instead of divergence.

Each sample's compressed picture is scored against the golden model's (label-free: "how much picture
quality compression cost") and, when the dataset carries a `targets` array of the output's shape (the clean
or high-resolution reference), both models' pictures against it, with the drop. PSNR and SSIM come from
torchmetrics (`peak_signal_noise_ratio` per sample over C, H, W; `structural_similarity_index_measure` with
its defaults: an 11-pixel Gaussian window, σ = 1.5, K1 = 0.01, K2 = 0.03; its map averaged away from the
5-pixel border, as scikit-image and the original paper do), on float64 tensors, with the
data range the job states (default 1.0: pictures in [0, 1]). Per-sample values are kept (8 bytes each per
score), so means, minima and the worst samples come from them.

A PSNR of identical pictures is +∞: it is kept out of the mean and counted in `n_identical`; SSIM is 1.
Pictures smaller than the SSIM window (11 × 11) cannot be scored and are refused at the first batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from worker.engine.errors import OutputMismatchError

TARGETS_KEY = "targets"
"""Dataset array of reference pictures for an image output (same per-sample shape), ignored as a model input."""

SSIM_WINDOW = 11


def image_shape_problem(per_sample_shape: tuple[int, ...]) -> str | None:
    """Why an output of this per-sample shape cannot be scored as pictures, or None."""
    if len(per_sample_shape) not in (2, 3):
        return f"an image output has per-sample shape (C, H, W) or (H, W), not {per_sample_shape}"
    h, w = per_sample_shape[-2:]
    if h < SSIM_WINDOW or w < SSIM_WINDOW:
        return f"pictures of {h} x {w} are smaller than SSIM's {SSIM_WINDOW} x {SSIM_WINDOW} window"
    return None


def _pictures(x: np.ndarray) -> Any:
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    return t.unsqueeze(1) if t.ndim == 3 else t  # (N, H, W) -> (N, 1, H, W)


def psnr_ssim(pred: np.ndarray, reference: np.ndarray, data_range: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample PSNR (dB) and SSIM of `pred` against `reference`, both (N, C, H, W) or (N, H, W)."""
    from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

    p, r = _pictures(pred), _pictures(reference)
    if p.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    mse = ((p - r) ** 2).flatten(1).mean(dim=1)
    psnr = peak_signal_noise_ratio(p, r, data_range=data_range, reduction="none", dim=(1, 2, 3)).numpy()
    psnr = np.where(
        mse.numpy() == 0, np.inf, psnr
    )  # torchmetrics divides by zero differently across versions
    # SSIM's map away from the border only, as Wang et al. and scikit-image average it: torchmetrics 1.9 also
    # averages the border, where the window reaches into its reflect padding (0.81 against 0.98 measured on
    # 24 x 24 pictures with a flat background).
    _, full = structural_similarity_index_measure(
        p, r, data_range=data_range, reduction="none", return_full_image=True
    )
    pad = (SSIM_WINDOW - 1) // 2
    ssim = full[..., pad:-pad, pad:-pad].flatten(1).mean(dim=1)
    return psnr.astype(np.float64), ssim.numpy().astype(np.float64)


def _finite_mean(values: np.ndarray) -> float | None:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else None


def _scores(psnr: np.ndarray, ssim: np.ndarray) -> dict[str, Any]:
    return {
        "psnr_db_mean": _finite_mean(psnr),
        "psnr_db_min": float(psnr.min()) if psnr.size and math.isfinite(psnr.min()) else None,
        "n_identical": int(np.isinf(psnr).sum()),
        "ssim_mean": _finite_mean(ssim),
        "ssim_min": float(ssim.min()) if ssim.size else None,
    }


@dataclass
class ImageOutputAccumulator:
    """Per-sample PSNR and SSIM of one image output; `update` per batch, `to_dict` at the end."""

    data_range: float = 1.0
    vs_golden: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))
    golden_vs_target: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))
    compressed_vs_target: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))

    def update(self, golden: np.ndarray, compressed: np.ndarray, targets: np.ndarray | None) -> None:
        """Fold in a batch of finite samples; `targets` of the same shape, or None without references."""
        for into, pred, ref in (
            (self.vs_golden, compressed, golden),
            (self.golden_vs_target, golden, targets),
            (self.compressed_vs_target, compressed, targets),
        ):
            if ref is None:
                continue
            if ref.shape != pred.shape:
                raise OutputMismatchError(
                    f"'{TARGETS_KEY}' gives pictures of shape {ref.shape[1:]}, the output {pred.shape[1:]}"
                )
            psnr, ssim = psnr_ssim(pred, ref, self.data_range)
            into[0].append(psnr)
            into[1].append(ssim)

    @staticmethod
    def _joined(pair: tuple[list[np.ndarray], list[np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.concatenate(pair[0]) if pair[0] else np.zeros(0),
            np.concatenate(pair[1]) if pair[1] else np.zeros(0),
        )

    def to_dict(self) -> dict[str, Any]:
        against_golden = _scores(*self._joined(self.vs_golden))
        against_targets = None
        if self.golden_vs_target[0]:
            golden = _scores(*self._joined(self.golden_vs_target))
            compressed = _scores(*self._joined(self.compressed_vs_target))

            def drop(key: str) -> float | None:
                g, c = golden[key], compressed[key]
                return None if g is None or c is None else g - c

            against_targets = {
                "golden": golden,
                "compressed": compressed,
                "psnr_drop_db": drop("psnr_db_mean"),
                "ssim_drop": drop("ssim_mean"),
            }
        return {
            "name": "image",
            "data_range": self.data_range,
            "psnr_db_vs_golden": against_golden["psnr_db_mean"],
            "ssim_vs_golden": against_golden["ssim_mean"],
            "against_golden": against_golden,
            "against_targets": against_targets,
            "psnr_drop_db": None if against_targets is None else against_targets["psnr_drop_db"],
            "ssim_drop": None if against_targets is None else against_targets["ssim_drop"],
        }
