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
from itertools import pairwise

import numpy as np

MAX_CANDIDATES = 3000
"""At most this many candidates per image enter NMS (the best-scoring ones): NMS scores every same-class
pair, up to K(K − 1)/2 = 4.5 M pairs at 3000 (their indexes: 72 MB), in chunks of PAIR_CHUNK. A trained
detector at the default 0.25 threshold has far fewer (tens); an image that had more is counted in
`DecodedBatch.capped`."""

PAIR_CHUNK = 1 << 20
"""Box pairs whose IoU is computed at once (about 100 MB of float64 temporaries)."""

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


def _pair_iou(b: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """IoU of the box pairs (src[e], dst[e]) of `b` (K, 4) xyxy float64."""
    return pair_iou(b[src], b[dst])


def pair_iou(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """IoU of each box of `p` (E, 4) with the box of `q` (E, 4) in the same row, xyxy float64. Areas are
    (x2 − x1)·(y2 − y1) with no +1, as COCO computes them; two empty boxes have IoU 0."""
    w = np.minimum(p[:, 2], q[:, 2]) - np.maximum(p[:, 0], q[:, 0])
    h = np.minimum(p[:, 3], q[:, 3]) - np.maximum(p[:, 1], q[:, 1])
    inter = np.clip(w, 0, None) * np.clip(h, 0, None)
    union = (p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1]) + (q[:, 2] - q[:, 0]) * (q[:, 3] - q[:, 1]) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def nms_classwise(
    boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, iou_threshold: float
) -> np.ndarray:
    """Greedy class-wise NMS: the indexes of the kept boxes, by decreasing score (stable on ties).

    Greedy NMS walks the boxes by decreasing score and keeps a box unless a kept box of its class overlaps it
    with IoU > `iou_threshold`. Here it is a fixed point instead of a walk: with the edges i → j = "same
    class, i before j in the walk, IoU > threshold", keep = f(keep) where f(k)[j] = no edge i → j with k[i].
    f(k)[j] depends only on boxes before j, so greedy's answer is f's only fixed point, and iterating f from
    "keep all" makes one more leading position final per iteration: at most K + 1 iterations, in practice
    about the length of the longest chain of boxes each suppressing the next, plus one (1 or 2 iterations
    measured on a trained detector's candidates, 5 to 8 on 1000-2000 random boxes in 30 dense clusters).

    Only same-class pairs are scored (boxes sorted by class, then the pairs of each class's block built with
    index arithmetic): a K × K IoU matrix took 53 ms at K = 1000 on this machine, 3 classes need a third of
    its pairs. Each iteration is one scatter over the edges. No loop per box or per class.
    """
    k = int(scores.shape[0])
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    sc = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels).astype(np.int64)
    order = np.lexsort((np.arange(k), -sc, lab))  # by class, then the walk's order: score down, index up
    b, lab = np.asarray(boxes, dtype=np.float64)[order], lab[order]
    end = np.searchsorted(lab, lab, side="right")  # where each box's class block ends
    later = end - np.arange(k) - 1  # boxes after this one in its block
    src = np.repeat(np.arange(k), later)
    offset = np.arange(src.size) - np.repeat(np.cumsum(later) - later, later)
    dst = src + 1 + offset  # every later box of the same class
    hit = np.concatenate(
        [
            _pair_iou(b, src[lo : lo + PAIR_CHUNK], dst[lo : lo + PAIR_CHUNK]) > iou_threshold
            for lo in range(0, max(src.size, 1), PAIR_CHUNK)
        ]
    )
    src, dst = src[hit], dst[hit]
    keep = np.ones(k, dtype=bool)
    for _ in range(k + 1):
        suppressed = np.zeros(k, dtype=bool)
        suppressed[dst[keep[src]]] = True
        if np.array_equal(~suppressed, keep):
            break
        keep = ~suppressed
    kept = order[keep]
    return kept[np.lexsort((kept, -sc[kept]))]


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


def _best_class(cls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each anchor's best class and its score, from class scores (N, C, A) in the model's dtype: the first of
    equal maxima, as `np.argmax` picks it, and NaN never wins (an anchor whose scores are all NaN gets score
    NaN: it is no candidate). `np.argmax` along the class axis walks each anchor's few classes one by one:
    0.47 ms for 20 × 3 × 1600 anchors, half of a batch's decoding; the maximum is one vectorised reduction
    and the first class that reaches it one masked pass per class (0.075 ms there; 26 ms against 46 at
    80 × 8400)."""
    top = np.fmax.reduce(cls, axis=1)  # NaN-ignoring maximum
    labels = np.full(top.shape, cls.shape[1] - 1, dtype=np.int64)
    for k in range(cls.shape[1] - 2, -1, -1):  # downwards: the lowest class reaching the maximum wins
        np.putmask(labels, cls[:, k] == top, k)
    return labels, top


def decode_yolo(
    head: np.ndarray,
    score_threshold: float,
    iou_threshold: float,
    image_size: tuple[float, float] | None,
) -> DecodedBatch:
    """A raw YOLO-style head ``[N, 4 + C, A]`` of a batch → its detections after class-wise NMS.

    Best class, score and the candidate mask are computed for the whole batch at once, and boxes only for the
    candidates: per image this took 0.2 ms at 1600 anchors, 40 % of the task's time in bench_detection."""
    h = np.asarray(head)
    n = h.shape[0]
    finite = np.isfinite(h).all(axis=1)  # (N, A): the box and every class score
    labels, best = _best_class(h[:, 4:, :])
    scores = best.astype(np.float64)
    with np.errstate(invalid="ignore"):
        candidate = finite & (scores >= score_threshold)
    invalid = (~finite).sum(axis=1).astype(np.int64)
    capped = candidate.sum(axis=1) > MAX_CANDIDATES
    for i in np.flatnonzero(capped):  # such an image keeps its best-scoring MAX_CANDIDATES
        idx = np.flatnonzero(candidate[i])
        candidate[i, idx[np.argsort(-scores[i, idx], kind="stable")[MAX_CANDIDATES:]]] = False
    image, anchor = np.nonzero(candidate)  # image by image, anchors in order
    boxes = cxcywh_to_xyxy(h[image, :4, anchor])  # (K, 4): the candidates of every image
    s, lab = scores[image, anchor], labels[image, anchor]
    # One NMS for as many images as fit in MAX_CANDIDATES, grouped by (image, class): ~0.1 ms of numpy
    # overhead per call measured, which per image was a third of the task's decoding time at 320 px.
    group = image * (h.shape[1] - 3) + lab  # (image, class): C + 1 > any label
    kept = np.zeros(len(s), dtype=bool)
    starts = np.searchsorted(image, np.arange(n + 1))
    first = 0
    while first < n:
        last = first + 1
        while last < n and starts[last + 1] - starts[first] <= MAX_CANDIDATES:
            last += 1
        lo, hi = starts[first], starts[last]
        kept[lo + nms_classwise(boxes[lo:hi], s[lo:hi], group[lo:hi], iou_threshold)] = True
        first = last
    # Each image's kept boxes by decreasing score (stable: ties in anchor order), its best MAX_DETECTIONS,
    # then clipped and checked for the whole batch at once: per image this was 200 small numpy calls a
    # comparison (11 ms of bench_detection's 75 ms task overhead, profiled).
    rows = np.flatnonzero(kept)
    rows = rows[np.lexsort((rows, -s[rows], image[rows]))]
    first_row = np.searchsorted(image[rows], np.arange(n))
    rows = rows[np.arange(len(rows)) - first_row[image[rows]] < MAX_DETECTIONS]
    return _split_images(boxes[rows], s[rows], lab[rows], image[rows], n, image_size, invalid, capped)


def _split_images(
    boxes: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    image: np.ndarray,
    n: int,
    image_size: tuple[float, float] | None,
    invalid: np.ndarray,
    capped: np.ndarray,
) -> DecodedBatch:
    """A batch's detections, already in each image's order (`image` nondecreasing, scores decreasing within
    an image), clipped, rid of empty boxes (added to `invalid`) and cut into its images."""
    if n == 0:
        return DecodedBatch([], invalid, capped)
    boxes = clip_to_image(boxes, image_size)
    ok = _finite_nonempty(boxes, scores)
    invalid += np.bincount(image[~ok], minlength=n)
    boxes, scores, image = boxes[ok], scores[ok], image[ok]
    labels = np.rint(labels[ok]).astype(np.int64)
    bounds = np.searchsorted(image, np.arange(n + 1)).tolist()  # slices, not np.split: 3x cheaper here
    images = [Detections(boxes[a:b], scores[a:b], labels[a:b]) for a, b in pairwise(bounds)]
    return DecodedBatch(images, invalid, capped)
