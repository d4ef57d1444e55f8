"""A tiny segmentation task for tests: synthetic pictures (bright squares = class 1, dimmer discs = class 2 on
noise; class 3 never occurs; an ignored top row) and a small CNN trained on them in a few seconds. Used by
tests/engine/test_segmentation_task.py (the task's metrics) and tests/engine/sweep/test_sweep_task.py (a sweep
whose frontier uses them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import confusion_matrix

SIZE = 24
CLASSES = 4
IGNORE = 255


def scenes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pictures (n, 1, SIZE, SIZE) float32, masks (n, SIZE, SIZE) int64 with an ignored top row)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    masks = np.zeros((n, SIZE, SIZE), dtype=np.int64)
    for i in range(n):
        for _ in range(2):
            cy, cx = (int(v) for v in rng.integers(4, SIZE - 4, size=2))
            r = int(rng.integers(2, 6))
            if rng.random() < 0.5:
                masks[i][(np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r)] = 1
            else:
                masks[i][(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = 2
    brightness = np.array([0.0, 1.0, 0.55], dtype=np.float32)
    pictures = brightness[masks][:, None] + rng.normal(0, 0.3, (n, 1, SIZE, SIZE)).astype(np.float32)
    masks[:, 0, :] = IGNORE  # a void row, as datasets mark pixels nobody labelled
    return pictures.astype(np.float32), masks


class Segmenter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.head = torch.nn.Conv2d(16, CLASSES, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv2(torch.relu(self.conv1(x)))))


def trained_segmenter(pictures: np.ndarray, masks: np.ndarray, epochs: int = 30) -> Segmenter:
    """A Segmenter fitted by Adam (seed 0) to the scenes; returned in eval mode."""
    torch.manual_seed(0)
    x, y = torch.from_numpy(pictures), torch.from_numpy(masks)
    model = Segmenter()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(epochs):
        for start in range(0, len(x), 64):
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                model(x[start : start + 64]), y[start : start + 64], ignore_index=IGNORE
            )
            loss.backward()
            optimiser.step()
    return model.eval()


@dataclass(frozen=True)
class SegmentationFiles:
    """A trained segmenter's ONNX export (golden), its 8-bit-weight copy, and a test set of 64 scenes with
    their masks written as scenes.npz (`input`, `masks`), as the job tests upload them."""

    golden: Path
    int8: Path
    dataset: Path
    test_pictures: np.ndarray
    test_masks: np.ndarray


def segmentation_files(folder: Path) -> SegmentationFiles:
    from worker.engine.compression import compress_module
    from worker.engine.compression.configs import WeightQuant
    from worker.engine.formats.exporters import export_onnx

    pictures, masks = scenes(256, seed=1)
    model = trained_segmenter(pictures, masks)
    golden = export_onnx(model, pictures[:2], folder / "golden.onnx", "input", "logits")
    test_pictures, test_masks = scenes(64, seed=2)
    np.savez(folder / "scenes.npz", input=test_pictures, masks=test_masks)
    copy = compress_module(model, {n: WeightQuant(8) for n in ("conv1", "conv2", "head")})[0].eval()
    int8 = export_onnx(copy, pictures[:2], folder / "w8.onnx", "input", "logits")
    return SegmentationFiles(golden, int8, folder / "scenes.npz", test_pictures, test_masks)


def sklearn_miou(masks: np.ndarray, pred: np.ndarray) -> float:
    """mIoU of predicted label maps against the masks (IGNORE pixels left out, classes neither true nor
    predicted left out of the mean) from scikit-learn's confusion matrix: the tests' independent reference."""
    keep = masks.ravel() != IGNORE
    matrix = confusion_matrix(masks.ravel()[keep], pred.ravel()[keep], labels=list(range(CLASSES)))
    tp = np.diag(matrix).astype(np.float64)
    union = matrix.sum(0) + matrix.sum(1) - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.nanmean(np.where(union > 0, tp / union, np.nan)))
