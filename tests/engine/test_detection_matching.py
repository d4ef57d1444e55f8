"""Per-image detection scores for a whole batch at once (worker/engine/tasks/detection_matching.py) on crowded
pictures the adapter's tests do not reach: more than COCO's 100 detections of one class, dozens of truth
boxes, duplicated boxes (IoU ties), tied scores, empty images on either side. Each image's AP@.5 equals
pycocotools scoring that image alone, and F1, mean IoU, missed and added a plain greedy loop's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.detection_reference import Box, plain_matching, pycoco_eval
from worker.engine.tasks import detection_matching
from worker.engine.tasks.detection_decode import Detections
from worker.engine.tasks.detection_matching import image_scores
from worker.engine.tasks.detection_scores import Truth

SIZES = [(0, 0), (0, 7), (5, 0), (3, 3), (40, 60), (25, 150), (1, 1), (12, 30), (60, 20), (8, 9)]
"""(truth boxes, detections) per image: empty on either side, crowded, > 100 detections of a class."""


def _pictures(seed: int) -> tuple[list[list[Box]], list[list[Box]]]:
    """Truth and detections in clusters (objects) so that boxes overlap, 3 classes, scores with ties; some
    truth boxes repeated exactly, and one image's detections mostly of class 0."""
    rng = np.random.default_rng(seed)
    truths: list[list[Box]] = []
    preds: list[list[Box]] = []

    def boxes(centres: np.ndarray, count: int, spread: float) -> np.ndarray:
        c = centres[rng.integers(0, 6, size=count)] + rng.normal(0, spread, size=(count, 2))
        wh = rng.uniform(15, 45, size=(count, 2))
        return np.concatenate([c - wh / 2, c + wh / 2], axis=1)

    for i, (m, k) in enumerate(SIZES):
        centres = rng.uniform(30, 170, size=(6, 2))
        t = boxes(centres, m, 6.0)
        t_lab = rng.integers(0, 3, size=m)
        if m >= 4:  # exact duplicates: a detection ties on IoU between them
            t[1], t_lab[1] = t[0], t_lab[0]
        d = boxes(centres, k, 8.0)
        d_lab = np.zeros(k, dtype=np.int64) if i == 5 else rng.integers(0, 3, size=k)
        scores = np.round(rng.uniform(0.05, 1.0, size=k), 2)  # ties
        order = np.argsort(-scores, kind="stable")
        truths.append([(t[j].tolist(), 1.0, int(t_lab[j])) for j in range(m)])
        preds.append([(d[j].tolist(), float(scores[j]), int(d_lab[j])) for j in order])
    # Written out: the first detection overlaps truth boxes 0 and 1 equally (IoU 2/3) and takes the last
    # (pycocotools' rule), so the second, which fits box 1 exactly, finds box 0 at IoU 0.43 and is added;
    # the third has IoU exactly 0.5 with box 2 and matches.
    truths.append([([0, 0, 10, 10], 1.0, 0), ([4, 0, 14, 10], 1.0, 0), ([100, 100, 110, 110], 1.0, 1)])
    preds.append([([2, 0, 12, 10], 0.9, 0), ([4, 0, 14, 10], 0.8, 0), ([100, 100, 120, 110], 0.7, 1)])
    return truths, preds


def _arrays(truths: list[list[Box]], preds: list[list[Box]]) -> tuple[list[Truth], list[Detections]]:
    def boxes(rows: list[Box]) -> np.ndarray:
        return np.array([b for b, _, _ in rows], dtype=np.float64).reshape(-1, 4)

    def labels(rows: list[Box]) -> np.ndarray:
        return np.array([lab for _, _, lab in rows], dtype=np.int64)

    return (
        [Truth(boxes(r), labels(r)) for r in truths],
        [Detections(boxes(r), np.array([s for _, s, _ in r]), labels(r)) for r in preds],
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_batch_scores_equal_pycocotools_and_a_plain_loop_per_image(seed: int) -> None:
    truths, preds = _pictures(seed)
    assert sum(lab == 0 for _, _, lab in preds[5]) > 100  # COCO scores only its best 100
    got = image_scores(*_arrays(truths, preds))
    assert all(len(v) == len(truths) for v in got.values())
    for i in range(len(truths)):
        ap = pycoco_eval(truths, preds, img_ids=[i + 1]).stats[1]
        assert (math.isnan(got["ap50"][i]) and ap < 0) or got["ap50"][i] == pytest.approx(ap, abs=1e-12), i
        for key, want in plain_matching(truths[i], preds[i]).items():
            value = got[key][i]
            assert (math.isnan(value) and math.isnan(want)) or value == pytest.approx(want, abs=1e-12), (
                i,
                key,
            )
    # Not trivially right: crowded images match some detections and miss some truth boxes.
    assert 0 < got["ap50"][4] < 1 and got["missed"][4] > 0 and got["added"][5] > 0
    assert math.isnan(got["ap50"][0]) and got["f1_50"][0] == 1.0 and got["f1_50"][1] == 0.0
    assert got["missed"][-1] == 1 and got["added"][-1] == 1 and got["mean_iou"][-1] == pytest.approx(7 / 12)


def test_matching_a_few_images_at_a_time_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The padded IoU grid is bounded (PADDED_CELLS): with room for one image at a time, every image is
    # matched alone, and each image's detections still find the same truth boxes.
    truths, preds = _arrays(*_pictures(2))
    whole = image_scores(truths, preds)
    monkeypatch.setattr(detection_matching, "PADDED_CELLS", 1)
    alone = image_scores(truths, preds)
    for key in whole:
        assert np.array_equal(whole[key], alone[key], equal_nan=True), key
    one_by_one = [image_scores([t], [p]) for t, p in zip(truths, preds, strict=True)]
    for key in whole:
        assert np.array_equal(whole[key], [s[key][0] for s in one_by_one], equal_nan=True), key
