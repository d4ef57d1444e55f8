"""Detector outputs → per-image detections (boxes xyxy, scores, class labels), for the detection task.

Two output layouts are decoded:

- **post-NMS** (`decode_post_nms`): boxes ``[N, K, 4]`` ("xyxy" or "xywh" = top-left corner, width,
  height), scores ``[N, K]``, labels ``[N, K]`` and optionally a valid count ``[N]`` or ``[N, 1]`` (torchvision,
  ONNX ``NonMaxSuppression`` + gather, TF object-detection exports). Rows at or beyond the count, and rows whose
  label is negative, are padding and ignored. A row is kept when its score is ≥ `score_threshold`.
- **raw YOLO-style heads** (`decode_yolo`): ``[N, 4 + C, A]`` as Ultralytics YOLOv8/11 export it: per anchor
  the box centre x, centre y, width, height, then C class scores (already in [0, 1]). Each anchor takes its
  best class (one label per anchor, Ultralytics' default); anchors whose score is ≥ `score_threshold` are
  candidates; candidates go through class-wise greedy NMS (`nms_classwise`).

Bad boxes never crash the decoding: a row whose box or score is NaN/±Inf, or whose box has no area inside
the image (width or height ≤ 0 after clipping to [0, W] × [0, H]; without an image size, width or height
≤ 0), is dropped and counted in the image's `invalid` count, which the task reports per image. Boxes that
lie partly outside the image are clipped to it (as Ultralytics and torchvision post-process them), after
NMS so that NMS sees the boxes the model gave.

Coordinates are in the units of the ground truth (pixels of the model's input); COCO's small / medium /
large areas assume pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_CANDIDATES = 3000
"""At most this many candidates per image enter NMS (the best-scoring ones): NMS holds a K × K float64 IoU
matrix, 72 MB at 3000. A trained detector at the default 0.25 threshold has far fewer (tens); an image that
had more is counted in `DecodedBatch.capped`."""

MAX_DETECTIONS = 300
"""At most this many detections per image are kept after NMS (Ultralytics' default max_det); COCO scores
the best 100 per image and class."""


@dataclass(frozen=True)
class Detections:
    """One image's detections: boxes (K, 4) float64 xyxy, scores (K,) float64, labels (K,) int64, sorted by
    decreasing score (stable: ties keep the model's order)."""

    boxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return int(self.scores.shape[0])


@dataclass(frozen=True)
class DecodedBatch:
    """A batch's detections, one per image; `invalid[i]`: rows of image i dropped as NaN/Inf or empty boxes;
    `capped[i]`: image i had more than MAX_CANDIDATES candidates before NMS (yolo only)."""

    images: list[Detections]
    invalid: np.ndarray
    capped: np.ndarray


def empty_detections() -> Detections:
    return Detections(np.zeros((0, 4)), np.zeros(0), np.zeros(0, dtype=np.int64))


def xywh_to_xyxy(boxes: np.ndarray) -> np.ndarray:
    """Top-left corner + width, height → corners."""
    out = np.array(boxes, dtype=np.float64, copy=True)
    out[..., 2:] = out[..., :2] + out[..., 2:]
    return out


def cxcywh_to_xyxy(boxes: np.ndarray) -> np.ndarray:
    """Centre + width, height → corners."""
    b = np.asarray(boxes, dtype=np.float64)
    half = b[..., 2:] / 2
    return np.concatenate([b[..., :2] - half, b[..., :2] + half], axis=-1)


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box of `a` (K, 4) with every box of `b` (M, 4), both xyxy: (K, M), float64. Areas are
    (x2 − x1)·(y2 − y1) with no +1, as COCO computes them; two empty boxes have IoU 0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(w, 0, None) * np.clip(h, 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def nms_classwise(
    boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, iou_threshold: float
) -> np.ndarray:
    """Greedy class-wise NMS: the indexes of the kept boxes, by decreasing score (stable on ties).

    Greedy NMS walks the boxes by decreasing score and keeps a box unless a kept box of its class overlaps it
    with IoU > `iou_threshold`. Here it is a fixed point over the whole IoU matrix instead of a walk: with S[i,
    j] = "i comes before j, same class, IoU > threshold", keep = f(keep) where f(k)[j] = no i with k[i] and S[i,
    j]. f(k)[j] depends only on k[0..j-1], so greedy's answer is f's only fixed point, and iterating f from
    "keep all" makes one more leading position final per iteration: at most K + 1 iterations, in practice
    about the length of the longest chain of boxes each suppressing the next, plus one (1 or 2 iterations
    measured on a trained detector's candidates, 6 to 8 on 2000 random boxes in 30 dense clusters). Each
    iteration is one (K,) × (K, K) product, no loop per box.
    """
    k = int(scores.shape[0])
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    b, lab = np.asarray(boxes, dtype=np.float64)[order], np.asarray(labels)[order]
    suppresses = (box_iou(b, b) > iou_threshold) & (lab[:, None] == lab[None, :])
    suppresses = np.triu(suppresses, k=1).astype(np.float32)  # counts ≤ K < 2^24: exact in float32
    keep = np.ones(k, dtype=np.float32)
    for _ in range(k + 1):
        new = ((keep @ suppresses) == 0).astype(np.float32)
        if np.array_equal(new, keep):
            break
        keep = new
    return order[keep.astype(bool)]


def _finite_nonempty(boxes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    finite = np.isfinite(boxes).all(axis=-1) & np.isfinite(scores)
    with np.errstate(invalid="ignore"):
        return finite & (boxes[..., 2] > boxes[..., 0]) & (boxes[..., 3] > boxes[..., 1])


def clip_to_image(boxes: np.ndarray, image_size: tuple[float, float] | None) -> np.ndarray:
    """Boxes xyxy clipped to [0, W] × [0, H] (`image_size` = (height, width)); unchanged without a size."""
    if image_size is None:
        return boxes
    h, w = image_size
    out = boxes.copy()
    out[..., 0::2] = np.clip(out[..., 0::2], 0, w)
    out[..., 1::2] = np.clip(out[..., 1::2], 0, h)
    return out


def _finish(
    boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, image_size: tuple[float, float] | None
) -> tuple[Detections, int]:
    """Clip, drop empty boxes (counted), sort by decreasing score."""
    boxes = clip_to_image(boxes, image_size)
    ok = _finite_nonempty(boxes, scores)
    order = np.argsort(-scores[ok], kind="stable")
    kept = Detections(boxes[ok][order], scores[ok][order], np.rint(labels[ok][order]).astype(np.int64))
    return kept, int((~ok).sum())


def decode_post_nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    count: np.ndarray | None,
    box_format: str,
    score_threshold: float,
    image_size: tuple[float, float] | None,
) -> DecodedBatch:
    """Post-NMS outputs of a batch → its detections (see the module docstring)."""
    b = np.asarray(boxes, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64).reshape(b.shape[:2])
    lab = np.asarray(labels, dtype=np.float64).reshape(b.shape[:2])
    if box_format == "xywh":
        b = xywh_to_xyxy(b)
    n, k = int(b.shape[0]), int(b.shape[1])
    real = np.ones((n, k), dtype=bool)
    if count is not None:
        c = np.asarray(count).reshape(n)
        real &= np.arange(k)[None, :] < c[:, None]
    with np.errstate(invalid="ignore"):
        real &= ~(lab < 0)  # a NaN label is not padding: it is an invalid row
    bad_label = ~np.isfinite(lab)
    images, invalid = [], np.zeros(n, dtype=np.int64)
    for i in range(n):
        rows = real[i] & ~bad_label[i]
        with np.errstate(invalid="ignore"):
            rows &= ~(s[i] < score_threshold)  # NaN scores stay, and are counted as invalid by _finish
        dets, dropped = _finish(b[i][rows], s[i][rows], lab[i][rows], image_size)
        images.append(dets)
        invalid[i] = dropped + int((real[i] & bad_label[i]).sum())
    return DecodedBatch(images, invalid, np.zeros(n, dtype=bool))


def decode_yolo(
    head: np.ndarray,
    score_threshold: float,
    iou_threshold: float,
    image_size: tuple[float, float] | None,
) -> DecodedBatch:
    """A raw YOLO-style head ``[N, 4 + C, A]`` of a batch → its detections after class-wise NMS."""
    h = np.asarray(head)
    n = h.shape[0]
    images, invalid, capped = [], np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    for i in range(n):
        cls_scores = h[i, 4:, :].astype(np.float64)  # (C, A)
        labels = np.argmax(np.nan_to_num(cls_scores, nan=-np.inf), axis=0)
        scores = np.take_along_axis(cls_scores, labels[None, :], axis=0)[0]
        boxes = cxcywh_to_xyxy(h[i, :4, :].T)
        finite = np.isfinite(boxes).all(axis=1) & np.isfinite(cls_scores).all(axis=0)
        with np.errstate(invalid="ignore"):
            candidate = finite & (scores >= score_threshold)
        invalid[i] = int((~finite).sum())
        idx = np.flatnonzero(candidate)
        if idx.size > MAX_CANDIDATES:
            capped[i] = True
            idx = idx[np.argsort(-scores[idx], kind="stable")[:MAX_CANDIDATES]]
        keep = idx[nms_classwise(boxes[idx], scores[idx], labels[idx], iou_threshold)][:MAX_DETECTIONS]
        dets, dropped = _finish(boxes[keep], scores[keep], labels[keep], image_size)
        images.append(dets)
        invalid[i] += dropped
    return DecodedBatch(images, invalid, capped)
