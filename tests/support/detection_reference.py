"""Independent references for the detection task's tests: COCO metrics straight from pycocotools, and the
per-image matching written out as a plain loop. Detections here are plain lists of (box xyxy, score, label)
per image, built by the tests from the models' raw outputs, never from the product's decoding."""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any

import numpy as np

Box = tuple[list[float], float, int]  # (xyxy, score, label); truth boxes carry score 1.0


def _xywh(b: list[float]) -> list[float]:
    return [b[0], b[1], b[2] - b[0], b[3] - b[1]]


def pycoco_eval(truth: list[list[Box]], preds: list[list[Box]], img_ids: list[int] | None = None) -> Any:
    """A pycocotools COCOeval (bbox) run on these images; image ids are index + 1."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    cats = sorted({lab for img in truth + preds for _, _, lab in img})
    anns = [
        {"id": k + 1, "image_id": i + 1, "category_id": lab + 1, "bbox": _xywh(b),
         "area": (b[2] - b[0]) * (b[3] - b[1]), "iscrowd": 0}
        for k, (i, (b, _, lab)) in enumerate((i, t) for i, img in enumerate(truth) for t in img)
    ]  # fmt: skip
    results = [
        {"image_id": i + 1, "category_id": lab + 1, "bbox": _xywh(b), "score": s}
        for i, img in enumerate(preds)
        for b, s, lab in img
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {
            "images": [{"id": i + 1} for i in range(len(truth))],
            "annotations": anns,
            "categories": [{"id": c + 1} for c in cats],
        }
        gt.createIndex()
        dt = gt.loadRes(results)
        ev = COCOeval(gt, dt, "bbox")
        if img_ids is not None:
            ev.params.imgIds = img_ids
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def coco_stats(ev: Any) -> dict[str, float | None]:
    names = ("map", "map50", "map75", "map_small", "map_medium", "map_large")
    out = {n: (None if ev.stats[i] < 0 else float(ev.stats[i])) for i, n in enumerate(names)}
    out["ar100"] = None if ev.stats[8] < 0 else float(ev.stats[8])
    return out


def per_class_ap(ev: Any) -> dict[int, tuple[float, float]]:
    """class → (AP@[.5:.95], AP@.5), classes with truth only."""
    p = ev.eval["precision"]
    out = {}
    for k, cat in enumerate(ev.params.catIds):
        a = p[:, :, k, 0, -1]
        if (a > -1).any():
            out[int(cat) - 1] = (float(a[a > -1].mean()), float(a[0][a[0] > -1].mean()))
    return out


def pr50_curves(ev: Any) -> dict[int, list[float | None]]:
    """class → interpolated precision at the 101 recall points at IoU .5 (None where undefined)."""
    p = ev.eval["precision"]
    return {
        int(cat) - 1: [float(v) if v > -1 else None for v in p[0, :, k, 0, -1]]
        for k, cat in enumerate(ev.params.catIds)
        if (p[0, :, k, 0, -1] > -1).any()
    }


def iou(a: list[float], b: list[float]) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0


def plain_matching(truth: list[Box], preds: list[Box], thr: float = 0.5) -> dict[str, float]:
    """F1, mean matched IoU, missed and added by a plain greedy walk: detections by decreasing score, each
    taking the unmatched same-class truth box of highest IoU ≥ thr."""
    order = sorted(range(len(preds)), key=lambda j: -preds[j][1])
    taken: set[int] = set()
    ious: list[float] = []
    for j in order:
        best, best_iou = None, thr
        for t, (tb, _, tl) in enumerate(truth):
            if t in taken or tl != preds[j][2]:
                continue
            v = iou(preds[j][0], tb)
            if v >= best_iou:
                best, best_iou = t, v
        if best is not None:
            taken.add(best)
            ious.append(best_iou)
    tp = len(ious)
    fp, fn = len(preds) - tp, len(truth) - tp
    return {
        "f1_50": 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn),
        "mean_iou": float(np.mean(ious)) if ious else math.nan,
        "missed": float(fn),
        "added": float(fp),
    }


def greedy_nms(boxes: list[list[float]], scores: list[float], labels: list[int], thr: float) -> list[int]:
    """The textbook walk: by decreasing score (ties in index order), keep a box unless a kept box of its class
    overlaps it by IoU > thr."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    kept: list[int] = []
    for i in order:
        if all(labels[j] != labels[i] or iou(boxes[j], boxes[i]) <= thr for j in kept):
            kept.append(i)
    return kept


def plain_yolo_decode(head: np.ndarray, thr: float, iou_thr: float, size: float) -> list[Box]:
    """One image's raw head (4 + C, A) read anchor by anchor: best class, score ≥ thr, centre box to corners,
    greedy NMS, then clipped to the square picture, boxes left without area dropped."""
    boxes, scores, labels = [], [], []
    for a in range(head.shape[1]):
        col = [float(v) for v in head[:, a]]
        cls = max(range(len(col) - 4), key=lambda c: (col[4 + c], -c))
        if col[4 + cls] >= thr:
            cx, cy, w, h = col[:4]
            boxes.append([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
            scores.append(col[4 + cls])
            labels.append(cls)
    out: list[Box] = []
    for i in greedy_nms(boxes, scores, labels, iou_thr):
        b = [min(max(v, 0.0), size) for v in boxes[i]]
        if b[2] > b[0] and b[3] > b[1]:
            out.append((b, scores[i], labels[i]))
    return out
