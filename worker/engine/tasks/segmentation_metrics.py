"""The numbers of the segmentation task (`worker.engine.tasks.segmentation`), over batches of label maps
(B, H, W) of class indices: confusion matrices, IoU and pixel accuracy from them, and boundary F1.

Definitions (every ratio a fraction in [0, 1]):
- confusion[t, p]: pixels whose truth is class t and prediction class p; truth pixels equal to
  `ignore_index` are left out.
- IoU of class c = TP / (TP + FP + FN) from the dataset's summed confusion matrix; undefined (None) for a
  class absent from both truth and prediction. mIoU = mean over the classes where it is defined.
- Pixel accuracy = trace / total of the confusion matrix.
- Boundary F1 at tolerance d (Csurka et al., BMVC 2013, class-agnostic): a boundary pixel of a label map is
  one with a 4-neighbour of another label (scikit-image's `find_boundaries`, mode "thick"; the image edge is
  no boundary). Boundary pixels on or next to (4-neighbour) an ignored truth pixel are left out of both
  sets, so a void band (as in Pascal VOC) adds none. Precision = share of predicted boundary pixels within
  Euclidean distance d of a true one, recall = share of true ones within d of a predicted one,
  F1 = 2PR / (P + R) per image: 1 when neither has a boundary, 0 when only one has. The dataset value is
  the mean over images.
"""

from __future__ import annotations

import numpy as np


class Confusion:
    """A running confusion matrix that grows with the largest class index seen (label-map outputs do not
    state their class count)."""

    def __init__(self, n_classes: int) -> None:
        self.matrix = np.zeros((n_classes, n_classes), dtype=np.int64)

    def add(self, per_image: np.ndarray) -> None:
        """Fold in per-image confusion matrices (B, C', C')."""
        summed = per_image.sum(axis=0)
        size = max(len(self.matrix), len(summed))
        if size > len(self.matrix):
            self.matrix = np.pad(self.matrix, (0, size - len(self.matrix)))
        self.matrix[: len(summed), : len(summed)] += summed

    def scores(self) -> dict[str, float | list[float | None] | None]:
        return iou_scores(self.matrix)


def per_image_confusion(
    truth: np.ndarray, pred: np.ndarray, n_classes: int, ignore_index: int | None = None
) -> np.ndarray:
    """Confusion matrices (B, C, C) of a batch, one bincount over (image, truth, prediction): memory
    O(B·C²), not O(pixels·C)."""
    b = len(truth)
    t = truth.reshape(b, -1).astype(np.int64)
    p = pred.reshape(b, -1).astype(np.int64)
    keep = np.ones_like(t, dtype=np.bool_) if ignore_index is None else t != ignore_index
    image = np.broadcast_to(np.arange(b)[:, None], t.shape)
    flat = (image[keep] * n_classes + t[keep]) * n_classes + p[keep]
    counts = np.bincount(flat, minlength=b * n_classes * n_classes)
    return counts.reshape(b, n_classes, n_classes)


def iou_per_class(matrix: np.ndarray) -> np.ndarray:
    """IoU per class (NaN where the class is in neither truth nor prediction); matrix (..., C, C)."""
    tp = np.diagonal(matrix, axis1=-2, axis2=-1).astype(np.float64)
    union = matrix.sum(axis=-1) + matrix.sum(axis=-2) - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, tp / np.maximum(union, 1), np.nan)


def mean_iou(matrix: np.ndarray) -> np.ndarray:
    """mIoU over the defined classes, per leading index (NaN when no class is defined)."""
    iou = iou_per_class(matrix)
    defined = ~np.isnan(iou)
    count = defined.sum(axis=-1)
    total = np.where(defined, iou, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def pixel_accuracy(matrix: np.ndarray) -> np.ndarray:
    total = matrix.sum(axis=(-2, -1))
    correct = np.trace(matrix, axis1=-2, axis2=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, correct / np.maximum(total, 1), np.nan)


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def iou_scores(matrix: np.ndarray) -> dict[str, float | list[float | None] | None]:
    """mIoU, per-class IoU and pixel accuracy of a dataset's confusion matrix (None: undefined)."""
    return {
        "miou": _num(float(mean_iou(matrix))),
        "pixel_accuracy": _num(float(pixel_accuracy(matrix))),
        "per_class_iou": [_num(float(v)) for v in iou_per_class(matrix)],
    }


# ------------------------------------------------------------------------------------------------ boundaries


def _neighbours(x: np.ndarray) -> list[np.ndarray]:
    """The four 4-neighbours of every pixel of (B, H, W), the edge replicated (so the edge is no boundary)."""
    p = np.pad(x, ((0, 0), (1, 1), (1, 1)), mode="edge")
    return [p[:, :-2, 1:-1], p[:, 2:, 1:-1], p[:, 1:-1, :-2], p[:, 1:-1, 2:]]


def boundaries(labels: np.ndarray, ignored: np.ndarray | None = None) -> np.ndarray:
    """Boundary pixels (B, H, W) of label maps; without those on or next to an `ignored` pixel."""
    edge = np.zeros(labels.shape, dtype=np.bool_)
    for n in _neighbours(labels):
        edge |= n != labels
    if ignored is not None and ignored.any():
        near = ignored.copy()
        for n in _neighbours(ignored):
            near |= n
        edge &= ~near
    return edge


def _disk(radius: int) -> list[tuple[int, int]]:
    return [
        (dy, dx)
        for dy in range(-radius, radius + 1)
        for dx in range(-radius, radius + 1)
        if dy * dy + dx * dx <= radius * radius
    ]


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Pixels within Euclidean distance `radius` of a set pixel of (B, H, W): an OR over the disk's offsets
    (exact on the integer grid; 13 offsets at radius 2)."""
    if radius <= 0:
        return mask.copy()
    _, h, w = mask.shape
    p = np.pad(mask, ((0, 0), (radius, radius), (radius, radius)))
    out = np.zeros_like(mask)
    for dy, dx in _disk(radius):
        out |= p[:, radius + dy : radius + dy + h, radius + dx : radius + dx + w]
    return out


def boundary_f1(
    truth: np.ndarray, pred: np.ndarray, tolerance: int, ignore_index: int | None = None
) -> np.ndarray:
    """Per-image boundary F1 (B,) of `pred` against `truth` (see the module docstring)."""
    ignored = None if ignore_index is None else truth == ignore_index
    t_edge = boundaries(truth, ignored)
    p_edge = boundaries(pred, ignored)
    axes = (1, 2)
    n_t = t_edge.sum(axis=axes)
    n_p = p_edge.sum(axis=axes)
    hit_p = (p_edge & dilate(t_edge, tolerance)).sum(axis=axes)
    hit_t = (t_edge & dilate(p_edge, tolerance)).sum(axis=axes)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(n_p > 0, hit_p / np.maximum(n_p, 1), 0.0)
        recall = np.where(n_t > 0, hit_t / np.maximum(n_t, 1), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    return np.where((n_t == 0) & (n_p == 0), 1.0, f1)
