"""Scores of detections against a truth (the dataset's boxes, or the golden model's detections): COCO's
box metrics over the dataset.

COCO metrics come from faster-coco-eval (the maintained C++ port of pycocotools' COCOeval; its numbers equal
pycocotools' exactly, which the tests check), called in-process on the accumulated detections: mAP@[.5:.95],
mAP@.5, mAP@.75, AR@100, mAP of small / medium / large boxes (areas < 32², < 96², ≥ 96² pixels), and per
class AP and AP@.5. Truth boxes are COCO annotations with area = width × height and no crowd; image ids
are dataset index + 1, category ids label + 1. COCO leaves a metric undefined (−1) when no truth box falls in
it (a class or size absent from the truth); it is None here.

Per-image scores against the golden model's detections are `detection_matching`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from worker.engine.tasks.detection_decode import Detections

STAT_NAMES = ("map", "map50", "map75", "map_small", "map_medium", "map_large")
"""COCO's first six summary stats, in its order; the ninth (index 8) is AR@100."""


@dataclass(frozen=True)
class Truth:
    """One image's truth boxes (M, 4) xyxy and labels (M,)."""

    boxes: np.ndarray
    labels: np.ndarray


def as_truth(d: Detections) -> Truth:
    return Truth(d.boxes, d.labels)


def _defined(x: float) -> float | None:
    return float(x) if x > -1 and math.isfinite(x) else None


def _columns(
    items: list[Truth] | list[Detections],
) -> tuple[list[int], list[list[float]], list[float], list[int]]:
    """Every box of these images at once: image ids (index + 1), boxes xywh, their areas, category ids
    (label + 1), as Python lists (one conversion for all images: per image it was a third of the inputs'
    time)."""
    counts = [len(x.labels) for x in items]
    if not sum(counts):
        return [], [], [], []
    b = np.concatenate([np.asarray(x.boxes, dtype=np.float64).reshape(-1, 4) for x in items])
    xywh = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], axis=1)
    labels = np.concatenate([np.asarray(x.labels, dtype=np.int64) for x in items])
    return (
        np.repeat(np.arange(1, len(items) + 1), counts).tolist(),
        xywh.tolist(),
        (xywh[:, 2] * xywh[:, 3]).tolist(),
        (labels + 1).tolist(),
    )


def coco_inputs(truth: list[Truth], preds: list[Detections]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The COCO ground-truth dataset and detection results for these images."""
    t_image, t_box, t_area, t_cat = _columns(truth)
    annotations = [
        {"id": j + 1, "image_id": i, "category_id": c, "bbox": box, "area": area, "iscrowd": 0}
        for j, (i, box, area, c) in enumerate(zip(t_image, t_box, t_area, t_cat, strict=True))
    ]
    d_image, d_box, _, d_cat = _columns(preds)
    scores = np.concatenate([d.scores for d in preds]).tolist() if d_image else []
    results = [
        {"image_id": i, "category_id": c, "bbox": box, "score": score}
        for i, c, box, score in zip(d_image, d_cat, d_box, scores, strict=True)
    ]
    images = [{"id": i + 1} for i in range(len(truth))]
    categories = [{"id": c, "name": str(c - 1)} for c in sorted(set(t_cat) | set(d_cat))]
    return {"images": images, "annotations": annotations, "categories": categories}, results


def coco_scores(truth: list[Truth], preds: list[Detections]) -> dict[str, Any]:
    """COCO box metrics of `preds` against `truth` (one entry per image, the same images)."""
    empty: dict[str, Any] = dict.fromkeys((*STAT_NAMES, "ar100"))
    if not any(len(t.labels) for t in truth):
        return {**empty, "per_class": [], "n_truth": 0, "n_detections": sum(len(d) for d in preds)}
    from faster_coco_eval import COCO, COCOeval_faster

    dataset, results = coco_inputs(truth, preds)
    quiet = {"print_function": lambda *_: None}
    gt = COCO(dataset, **quiet)
    dt = gt.loadRes(results)
    ev = COCOeval_faster(gt, dt, "bbox", **quiet)
    ev.run()
    stats = [float(x) for x in ev.stats]
    out: dict[str, Any] = {name: _defined(stats[i]) for i, name in enumerate(STAT_NAMES)}
    out["ar100"] = _defined(stats[8])
    precision = np.asarray(
        ev.eval["precision"]
    )  # (IoU thresholds, recall thresholds, classes, areas, maxDets)
    counts = np.bincount(np.concatenate([t.labels for t in truth]).astype(np.int64))
    per_class = []
    for k, cat in enumerate(ev.params.catIds):
        p = precision[:, :, k, 0, -1]  # area "all", maxDets 100
        label = int(cat) - 1
        per_class.append(
            {
                "class_index": label,
                "n_truth": int(counts[label]) if label < len(counts) else 0,
                "ap": _defined(float(p[p > -1].mean())) if (p > -1).any() else None,
                "ap50": _defined(float(p[0][p[0] > -1].mean())) if (p[0] > -1).any() else None,
                # the interpolated precision at COCO's 101 recall points (0, 0.01, ..., 1) at IoU .5: the
                # class's PR curve as AP@.5 averages it; None where COCO marks it undefined (-1)
                "pr50": [float(v) if v > -1 else None for v in p[0]] if (p[0] > -1).any() else None,
            }
        )
    out["per_class"] = per_class
    out["n_truth"] = int(counts.sum())
    out["n_detections"] = len(results)
    return out
