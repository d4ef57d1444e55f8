"""Per-image scores of detections against a truth (the golden model's detections), for a batch of images at
once.

COCO's matching at IoU ≥ 0.5: each detection, by decreasing score, takes the unmatched truth box of its
class with the highest IoU (the last one on ties, as pycocotools does). From it, per image: AP@.5 (COCO's
101-point interpolated precision, averaged over the classes the truth has in that image, each class's best
100 detections; NaN without truth boxes, where COCO leaves it undefined), F1 = 2·TP / (2·TP + FP + FN) (1
when neither has a box), mean IoU of the matched pairs (NaN without one), truth boxes missed (FN) and
detections added (FP).

Everything runs over the whole batch, never image by image: one image at a time cost 0.2 ms a picture in
numpy calls on a few boxes (20 ms of bench_detection's 75 ms task overhead, profiled). The greedy walk is
sequential within an image, so it walks detection ranks instead, every image's r-th detection at once over
a padded (images, detections, truth boxes) IoU grid; AP comes from segment-wise reductions over
(image, class) groups. Means are sums in index order divided by counts, which can differ from `np.mean`'s
pairwise sum in the last bit (tests/engine/test_detection_matching.py checks them at 1e-12 against plain
loops and pycocotools).
"""

from __future__ import annotations

import numpy as np

from worker.engine.tasks.detection_decode import Detections, pair_iou
from worker.engine.tasks.detection_scores import Truth

MATCH_IOU = 0.5
MAX_DETS = 100
"""COCO's maxDets: the best 100 detections per image and class are scored."""
RECALL_THRESHOLDS = np.linspace(0.0, 1.0, 101)
PADDED_CELLS = 1 << 20
"""At most this many cells (8 MB) in one padded IoU grid; a batch whose images have more detections × truth
boxes is matched a few images at a time."""


def _flat(items: list[Truth] | list[Detections]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boxes (sum of K, 4), labels and per-image counts of a list of images."""
    counts = np.array([len(x.labels) for x in items], dtype=np.int64)
    if counts.sum() == 0:
        return np.zeros((0, 4)), np.zeros(0, dtype=np.int64), counts
    boxes = np.concatenate([np.asarray(x.boxes, dtype=np.float64).reshape(-1, 4) for x in items])
    labels = np.concatenate([np.asarray(x.labels, dtype=np.int64) for x in items])
    return boxes, labels, counts


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.cumsum(counts) - counts


def _match_chunk(
    truth: tuple[np.ndarray, np.ndarray, np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    iou_threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """`match` on a few images (module docstring), their boxes flattened as `_flat` gives them."""
    t_boxes, t_labels, m = truth
    p_boxes, p_labels, k = pred
    matched = np.full(int(k.sum()), -1, dtype=np.int64)
    ious = np.full(int(k.sum()), np.nan)
    if k.sum() == 0 or m.sum() == 0:
        return matched, ious
    n = len(k)
    image = np.repeat(np.arange(n), k)  # each detection's image, and its rank in it
    rank = np.arange(len(image)) - np.repeat(_starts(k), k)
    per = m[image]  # every detection against every truth box of its image
    src = np.repeat(np.arange(len(image)), per)
    col = np.arange(len(src)) - np.repeat(_starts(per), per)
    dst = _starts(m)[image[src]] + col
    iou = pair_iou(p_boxes[src], t_boxes[dst])
    iou[p_labels[src] != t_labels[dst]] = -1.0
    grid = np.full((n, int(k.max()), int(m.max())), -1.0)  # -1: another class, or padding
    grid[image[src], rank[src], col] = iou
    taken = np.zeros((n, grid.shape[2]), dtype=bool)
    got = np.full(grid.shape[:2], -1, dtype=np.int64)
    got_iou = np.full(grid.shape[:2], np.nan)
    rows = np.arange(n)
    for r in range(grid.shape[1]):  # one step per rank: each match depends on the image's earlier ones
        row = np.where(taken, -1.0, grid[:, r])
        best = grid.shape[2] - 1 - np.argmax(row[:, ::-1], axis=1)  # the last of equal maxima, as pycocotools
        value = row[rows, best]
        hit = value >= iou_threshold
        got[hit, r], got_iou[hit, r] = best[hit], value[hit]
        taken[rows[hit], best[hit]] = True
    return got[image, rank], got_iou[image, rank]


def match(
    truth: tuple[np.ndarray, np.ndarray, np.ndarray],
    pred: tuple[np.ndarray, np.ndarray, np.ndarray],
    iou_threshold: float = MATCH_IOU,
) -> tuple[np.ndarray, np.ndarray]:
    """COCO's greedy matching (module docstring) of each image's detections with its truth boxes, both as
    `_flat` gives them: for each detection (images in order, each image's detections in its order, by
    decreasing score), the index of its truth box within its image or −1, and the pair's IoU (NaN when
    unmatched)."""
    m, k = truth[2], pred[2]
    t0, p0 = _starts(m), _starts(k)
    parts: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0, dtype=np.int64), np.zeros(0))]
    lo = 0
    while lo < len(k):  # as many images at a time as fit in PADDED_CELLS
        hi, k_max, m_max = lo + 1, k[lo], m[lo]
        while hi < len(k) and (hi + 1 - lo) * max(k_max, k[hi]) * max(m_max, m[hi]) <= PADDED_CELLS:
            k_max, m_max, hi = max(k_max, k[hi]), max(m_max, m[hi]), hi + 1
        t = slice(t0[lo], t0[lo] + m[lo:hi].sum())
        p = slice(p0[lo], p0[lo] + k[lo:hi].sum())
        parts.append(
            _match_chunk(
                (truth[0][t], truth[1][t], m[lo:hi]), (pred[0][p], pred[1][p], k[lo:hi]), iou_threshold
            )
        )
        lo = hi
    return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])


def _ap50(
    truth: tuple[np.ndarray, np.ndarray], pred: tuple[np.ndarray, np.ndarray], tp: np.ndarray, n: int
) -> np.ndarray:
    """Each image's AP@.5 (module docstring; NaN without truth boxes) from its truth's (image, label) and its
    detections' (image, label) with their matches `tp`, detections in image order then score order.

    Per (image, class) of the truth: the interpolated precision at recall t is the best precision among the
    class's detections whose recall reaches t, 0 if none does (COCO's envelope taken where recall first
    reaches t: recall only grows down the list), so one masked maximum per group and threshold."""
    t_image, t_labels = truth
    d_image, d_labels = pred
    if len(t_labels) == 0:
        return np.full(n, np.nan)
    width = int(max(t_labels.max(initial=0), d_labels.max(initial=0))) + 1
    keys, n_truth = np.unique(t_image * width + t_labels, return_counts=True)  # groups, sorted
    ap = np.zeros(len(keys))
    d_key = d_image * width + d_labels
    order = np.argsort(d_key, kind="stable")  # by group, each group's detections still by score
    d_key, hit = d_key[order], tp[order]
    group = np.minimum(np.searchsorted(keys, d_key), len(keys) - 1)
    pos = np.arange(len(d_key)) - np.searchsorted(d_key, d_key)  # rank within its (image, class)
    use = (pos < MAX_DETS) & (keys[group] == d_key)  # a class the image's truth has, its best 100
    group, hit, pos = group[use], hit[use], pos[use]
    if len(group):
        first = np.flatnonzero(pos == 0)
        cum = np.cumsum(hit)
        tps = cum - np.repeat(cum[first] - hit[first], np.diff(np.append(first, len(cum))))
        fps = pos + 1 - tps
        tps_f, fps_f = tps.astype(np.float64), fps.astype(np.float64)
        recall = tps_f / n_truth[group]
        precision = tps_f / (tps_f + fps_f + np.spacing(1))  # pycocotools' own epsilon
        reached = np.where(recall[:, None] >= RECALL_THRESHOLDS[None, :], precision[:, None], 0.0)
        ap[group[first]] = np.maximum.reduceat(reached, first, axis=0).mean(axis=1)
    image_of = keys // width
    classes = np.bincount(image_of, minlength=n)
    total = np.bincount(image_of, weights=ap, minlength=n)
    return np.divide(total, classes, out=np.full(n, np.nan), where=classes > 0)


def image_scores(truths: list[Truth], preds: list[Detections]) -> dict[str, np.ndarray]:
    """Per-image scores of each image's `preds` against its `truths` (module docstring): arrays of one value
    per image, NaN where undefined."""
    n = len(truths)
    truth, pred = _flat(truths), _flat(preds)
    m, k = truth[2], pred[2]
    matched, ious = match(truth, pred)
    tp = matched >= 0
    t_image, d_image = np.repeat(np.arange(n), m), np.repeat(np.arange(n), k)
    n_tp = np.bincount(d_image[tp], minlength=n)
    fn, fp = m - n_tp, k - n_tp
    counted = 2 * n_tp + fp + fn
    iou_sum = np.bincount(d_image[tp], weights=ious[tp], minlength=n)
    return {
        "ap50": _ap50((t_image, truth[1]), (d_image, pred[1]), tp, n),
        "f1_50": np.divide(2 * n_tp, counted, out=np.ones(n), where=counted > 0),
        "mean_iou": np.divide(iou_sum, n_tp, out=np.full(n, np.nan), where=n_tp > 0),
        "missed": fn.astype(np.float64),
        "added": fp.astype(np.float64),
    }
