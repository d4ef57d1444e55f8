"""Decoding detector outputs (worker/engine/tasks/detection_decode.py): the vectorised class-wise NMS keeps
exactly the boxes a plain per-box greedy walk keeps, and both output layouts decode hand-built cases as
written out here, with bad rows flagged instead of crashing."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.detection_reference import greedy_nms, iou
from worker.engine.tasks.detection_decode import decode_post_nms, decode_yolo, nms_classwise


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_nms_keeps_exactly_what_greedy_nms_keeps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 400))
    # Clustered boxes (a few centres, jittered) so boxes overlap in chains; few classes; rounded scores
    # so that ties happen.
    centres = rng.uniform(20, 80, size=(int(rng.integers(1, 12)), 2))
    c = centres[rng.integers(0, len(centres), size=k)] + rng.normal(0, 6, size=(k, 2))
    wh = rng.uniform(4, 30, size=(k, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], axis=1)
    scores = np.round(rng.random(k), 2)
    labels = rng.integers(0, 3, size=k)
    thr = float(rng.choice([0.3, 0.45, 0.6]))
    got = nms_classwise(boxes, scores, labels, thr)
    assert got.tolist() == greedy_nms(boxes.tolist(), scores.tolist(), labels.tolist(), thr)
    assert 0 < len(got) < k or k < 5  # some boxes were suppressed: the check can fail


def test_a_suppressed_box_suppresses_nothing() -> None:
    # A suppresses B; B would suppress C, but B is gone, so C stays (one-shot "fast NMS" would drop C).
    boxes = np.array([[0, 0, 10, 10], [3, 0, 13, 10], [6, 0, 16, 10]], dtype=float)
    scores = np.array([0.9, 0.8, 0.7])
    labels = np.zeros(3, dtype=np.int64)
    assert iou(boxes[0].tolist(), boxes[1].tolist()) > 0.45 > iou(boxes[0].tolist(), boxes[2].tolist())
    assert iou(boxes[1].tolist(), boxes[2].tolist()) > 0.45
    assert nms_classwise(boxes, scores, labels, 0.45).tolist() == [0, 2]
    # Another class is never suppressed.
    assert nms_classwise(boxes, scores, np.array([0, 1, 0]), 0.45).tolist() == [0, 1, 2]
    assert nms_classwise(np.zeros((0, 4)), np.zeros(0), np.zeros(0), 0.45).tolist() == []


def test_post_nms_outputs_skip_padding_convert_xywh_and_flag_bad_rows() -> None:
    boxes = np.array(
        [
            [[10, 10, 20, 20], [0, 0, 5, 5], [1, 1, 2, 2], [7, 7, 1, 1]],  # xywh
            [[np.nan, 0, 4, 4], [60, 60, 10, 10], [-5, -5, 10, 10], [30, 30, 4, 4]],
        ],
        dtype=np.float32,
    )
    scores = np.array([[0.9, 0.3, 0.95, 0.8], [0.7, 0.6, 0.5, 0.05]], dtype=np.float32)
    labels = np.array([[2, 0, 1, -1], [1, 1, 3, 0]], dtype=np.int64)
    count = np.array([[3], [4]])
    out = decode_post_nms(boxes, scores, labels, count, "xywh", 0.1, image_size=(64, 64))
    a, b = out.images
    # Image 0: row 3 is beyond the count; sorted by score: row 2, row 0, row 1.
    assert a.boxes.tolist() == [[1, 1, 3, 3], [10, 10, 30, 30], [0, 0, 5, 5]]
    assert np.allclose(a.scores, [0.95, 0.9, 0.3]) and a.labels.tolist() == [1, 2, 0]
    # Image 1: NaN box flagged; (60,60)-(70,70) clipped to (60,60)-(64,64); (-5,-5)-(5,5) clipped to
    # (0,0)-(5,5); row 3 is below the threshold.
    assert b.boxes.tolist() == [[60, 60, 64, 64], [0, 0, 5, 5]] and b.labels.tolist() == [1, 3]
    assert out.invalid.tolist() == [0, 1]

    # A box entirely outside the image has no area left: flagged, not kept. A count of shape [N] works too.
    outside = decode_post_nms(
        np.array([[[70, 70, 90, 90], [1, 1, 9, 9]]]), np.array([[0.5, 0.4]]), np.array([[0, 0]]),
        np.array([2]), "xyxy", 0.0, image_size=(64, 64),
    )  # fmt: skip
    assert outside.images[0].boxes.tolist() == [[1, 1, 9, 9]] and outside.invalid.tolist() == [1]
    # Without an image size nothing is clipped; a box with negative width is flagged.
    free = decode_post_nms(
        np.array([[[70, 70, 90, 90], [9, 1, 1, 9]]]), np.array([[0.5, 0.4]]), np.array([[0, 0]]),
        None, "xyxy", 0.0, image_size=None,
    )  # fmt: skip
    assert free.images[0].boxes.tolist() == [[70, 70, 90, 90]] and free.invalid.tolist() == [1]


def test_an_image_with_nothing_decodes_to_no_detections() -> None:
    out = decode_post_nms(
        np.zeros((2, 3, 4)), np.zeros((2, 3)), -np.ones((2, 3)), None, "xyxy", 0.0, image_size=(8, 8)
    )
    assert [len(d) for d in out.images] == [0, 0] and out.invalid.tolist() == [0, 0]
    head = np.zeros((1, 4 + 2, 5), dtype=np.float32)
    yolo = decode_yolo(head, 0.25, 0.45, image_size=None)
    assert len(yolo.images[0]) == 0 and yolo.images[0].boxes.shape == (0, 4)


def test_yolo_heads_decode_centre_boxes_best_class_and_classwise_nms() -> None:
    # Anchors (columns): cx, cy, w, h, score class 0, score class 1.
    anchors = [
        [20, 20, 10, 10, 0.9, 0.1],  # kept: class 0
        [21, 20, 10, 10, 0.8, 0.2],  # same place, class 0: suppressed by anchor 0
        [21, 21, 10, 10, 0.1, 0.7],  # same place, class 1: kept
        [50, 50, 8, 8, 0.2, 0.1],  # below 0.25: not a candidate
        [np.nan, 5, 4, 4, 0.9, 0.0],  # NaN: flagged
        [62, 10, 10, 6, 0.0, 0.5],  # partly outside a 64-px image: clipped to x in [57, 64]
    ]
    head = np.array(anchors, dtype=np.float32).T[None]  # (1, 6, A)
    out = decode_yolo(head, 0.25, 0.45, image_size=(64, 64))
    (d,) = out.images
    assert d.boxes.tolist() == [[15, 15, 25, 25], [16, 16, 26, 26], [57, 7, 64, 13]]
    assert d.labels.tolist() == [0, 1, 1] and np.allclose(d.scores, [0.9, 0.7, 0.5])
    assert out.invalid.tolist() == [1] and out.capped.tolist() == [False]


def test_an_image_with_too_many_candidates_keeps_the_best_scoring_ones_and_says_so() -> None:
    from worker.engine.tasks.detection_decode import MAX_CANDIDATES

    rng = np.random.default_rng(0)
    a = MAX_CANDIDATES + 500
    head = np.zeros((1, 6, a), dtype=np.float32)
    head[0, :2] = rng.uniform(100, 900, size=(2, a))  # scattered: almost nothing overlaps
    head[0, 2:4] = 4
    head[0, 4] = rng.uniform(0.3, 1.0, size=a)
    out = decode_yolo(head, 0.25, 0.45, image_size=None)
    assert out.capped.tolist() == [True]
    (d,) = out.images
    best = np.sort(head[0, 4])[::-1]
    assert d.scores.min() >= best[MAX_CANDIDATES - 1] and len(d) == 300  # MAX_DETECTIONS of the best


def test_a_batch_decodes_as_its_images_do_one_by_one() -> None:
    # NMS runs once over the batch grouped by (image, class): the same boxes in two images never suppress
    # each other, and each image's detections equal its own decoding, which equals the greedy walk.
    rng = np.random.default_rng(1)
    one = np.concatenate(
        [
            rng.uniform(20, 60, size=(1, 2, 200)),
            rng.uniform(5, 30, size=(1, 2, 200)),
            rng.random((1, 3, 200)),
        ],
        axis=1,
    ).astype(np.float32)
    batch = np.concatenate([one, one, one[:, :, ::-1]])
    together = decode_yolo(batch, 0.25, 0.45, image_size=(64, 64)).images
    for i in range(3):
        (alone,) = decode_yolo(batch[i : i + 1], 0.25, 0.45, image_size=(64, 64)).images
        assert np.array_equal(together[i].boxes, alone.boxes) and np.array_equal(
            together[i].labels, alone.labels
        )
    assert np.array_equal(together[0].boxes, together[1].boxes) and len(together[0]) > 3
    col = batch[0].astype(np.float64)
    lab, sc = col[4:].argmax(0), col[4:].max(0)
    cand = np.flatnonzero(sc >= 0.25)
    xyxy = np.concatenate(
        [col[:2, cand].T - col[2:4, cand].T / 2, col[:2, cand].T + col[2:4, cand].T / 2], axis=1
    )
    expected = greedy_nms(xyxy.tolist(), sc[cand].tolist(), lab[cand].tolist(), 0.45)
    assert np.allclose(together[0].scores, sc[cand][expected])  # all inside the picture: none clipped away


def test_nms_scores_its_pairs_in_chunks_without_changing_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.engine.tasks import detection_decode

    rng = np.random.default_rng(5)
    k = 300
    c = rng.uniform(20, 80, size=(k, 2))
    wh = rng.uniform(4, 30, size=(k, 2))
    boxes = np.concatenate([c - wh / 2, c + wh / 2], axis=1)
    scores, labels = rng.random(k), rng.integers(0, 2, size=k)
    whole = nms_classwise(boxes, scores, labels, 0.45)
    monkeypatch.setattr(detection_decode, "PAIR_CHUNK", 97)  # ~22 000 pairs: 230 chunks, one cut mid-class
    assert nms_classwise(boxes, scores, labels, 0.45).tolist() == whole.tolist()
    assert whole.tolist() == greedy_nms(boxes.tolist(), scores.tolist(), labels.tolist(), 0.45)
