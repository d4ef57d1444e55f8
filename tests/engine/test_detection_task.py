"""The detection task adapter (worker/engine/tasks/detection.py) through `compare_models`, on post-NMS
outputs written out by the test: every COCO number equals pycocotools run here on the same detections, the
per-image values equal pycocotools per image and a plain matching loop, and bad inputs are flagged or refused
saying why."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.api.result_schemas.task_blocks import DetectionTaskOut
from kneeboard_client.thresholds import Limit, check_limit, higher_is_better, output_metrics
from tests.backend.test_typed_results import extras
from tests.support.detection_reference import (
    Box,
    coco_stats,
    per_class_ap,
    plain_matching,
    pr50_curves,
    pycoco_eval,
)
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.types import TensorSpec

N, K, M = 40, 12, 6  # images, detection rows per image, truth rows per image
OPTIONS = {"format": "post_nms", "count_output": "count"}


class TableRunner:
    """Replays stored post-NMS outputs: input 'index' (batch, 1) picks the rows of boxes (N, K, 4), scores,
    labels (N, K) and count (N, 1)."""

    def __init__(self, outputs: Mapping[str, np.ndarray]) -> None:
        self.table = dict(outputs)
        self.inputs = [TensorSpec("index", ("batch", 1), "float32")]
        self.outputs = [TensorSpec(k, ("batch", *v.shape[1:]), "float32") for k, v in self.table.items()]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        idx = np.asarray(feeds["index"])[:, 0].astype(np.int64)
        return {k: v[idx] for k, v in self.table.items()}


def _scene(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Truth boxes (N, M, 4) xyxy with −1-padded labels (N, M): 0 to M boxes of 3 classes per image."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 200, size=(N, M, 2))
    wh = rng.uniform(8, 120, size=(N, M, 2))
    boxes = np.concatenate([xy, xy + wh], axis=2)
    labels = rng.integers(0, 3, size=(N, M))
    labels[np.arange(M)[None, :] >= rng.integers(0, M + 1, size=(N, 1))] = -1
    return boxes, labels


def _detector(gt_boxes: np.ndarray, gt_labels: np.ndarray, noise: float, seed: int) -> dict[str, np.ndarray]:
    """Post-NMS outputs near the truth: jittered truth boxes (some relabelled), a few spurious ones, random
    scores, rows padded past 'count' with junk."""
    rng = np.random.default_rng(seed)
    boxes = rng.uniform(0, 250, size=(N, K, 4)).astype(np.float32)
    boxes[..., 2:] = boxes[..., :2] + rng.uniform(5, 60, size=(N, K, 2))
    labels = rng.integers(0, 3, size=(N, K)).astype(np.float32)
    count = np.zeros((N, 1), dtype=np.float32)
    for i in range(N):
        real = np.flatnonzero(gt_labels[i] >= 0)
        found = real[rng.random(len(real)) < 0.85]
        n = len(found)
        boxes[i, :n] = gt_boxes[i, found] + rng.normal(0, noise, size=(n, 4))
        labels[i, :n] = np.where(rng.random(n) < 0.9, gt_labels[i, found], rng.integers(0, 3, size=n))
        count[i] = min(K, n + int(rng.integers(0, 4)))
    scores = np.round(rng.uniform(0.05, 1.0, size=(N, K)), 3).astype(np.float32)
    return {"boxes": boxes, "scores": scores, "labels": labels, "count": count}


def _rows(out: Mapping[str, np.ndarray]) -> list[list[Box]]:
    """The detections the outputs state, read plainly: rows below the count, less boxes with no area (x2 ≤ x1
    or y2 ≤ y1: the jitter makes a few), which the task flags and drops (pycocotools ignores them too: their
    negative area is outside every area range)."""
    rows: list[list[Box]] = []
    for i in range(N):
        rows.append([])
        for j in range(int(out["count"][i, 0])):
            b = out["boxes"][i, j].astype(np.float64).tolist()
            if b[2] > b[0] and b[3] > b[1]:
                rows[i].append((b, float(out["scores"][i, j]), int(out["labels"][i, j])))
    return rows


def _has_area(b: np.ndarray) -> bool:
    return bool(b[2] > b[0] and b[3] > b[1])  # False for NaN


def _truth_rows(boxes: np.ndarray, labels: np.ndarray) -> list[list[Box]]:
    return [
        [(boxes[i, j].tolist(), 1.0, int(labels[i, j])) for j in range(M) if labels[i, j] >= 0]
        for i in range(N)
    ]


def _compare(
    golden: dict[str, np.ndarray], compressed: dict[str, np.ndarray], data: dict[str, Any], **options: Any
) -> Any:
    merged = {k: v for k, v in {**OPTIONS, **options}.items() if v is not None}  # None: leave the key out
    params = FidelityParams(batch_size=7, task="detection", task_options=merged)
    data = {"index": np.arange(N, dtype=np.float32)[:, None], **data}
    return compare_models(TableRunner(golden), TableRunner(compressed), data, None, params)


def _same(got: float | None, want: float | None) -> bool:
    return (got is None and want is None) or (
        got is not None and want is not None and abs(got - want) <= 1e-12
    )


def test_coco_numbers_equal_pycocotools_on_the_same_detections() -> None:
    gt_boxes, gt_labels = _scene(0)
    golden, compressed = _detector(gt_boxes, gt_labels, 2.0, 1), _detector(gt_boxes, gt_labels, 9.0, 2)
    report = _compare(golden, compressed, {"gt_boxes": gt_boxes, "gt_labels": gt_labels})
    task = report.summary_dict()["outputs"]["boxes"]["task"]
    truth, g_rows, c_rows = _truth_rows(gt_boxes, gt_labels), _rows(golden), _rows(compressed)

    for block, ev in (
        (task["against_labels"]["golden"], pycoco_eval(truth, g_rows)),
        (task["against_labels"]["compressed"], pycoco_eval(truth, c_rows)),
        (task["against_golden"], pycoco_eval(g_rows, c_rows)),
    ):
        want = coco_stats(ev)
        assert all(_same(block[k], want[k]) for k in want), (block, want)
        classes = per_class_ap(ev)
        got = {
            row["class_index"]: (row["ap"], row["ap50"])
            for row in block["per_class"]
            if row["ap"] is not None
        }
        # The same precision table (faster-coco-eval is pycocotools' arithmetic in C++); its mean can differ
        # in the last bit from numpy's summation order over another memory layout.
        assert got.keys() == classes.keys()
        assert all(got[c] == pytest.approx(classes[c], abs=1e-12) for c in classes)
        curves = {row["class_index"]: row["pr50"] for row in block["per_class"] if row["pr50"] is not None}
        want_curves = pr50_curves(ev)
        assert curves.keys() == want_curves.keys() and all(len(c) == 101 for c in curves.values())
        for c, curve in want_curves.items():
            assert [v is None for v in curves[c]] == [v is None for v in curve]
            assert [v for v in curves[c] if v is not None] == pytest.approx(
                [v for v in curve if v is not None], abs=1e-12
            )
        # a curve that is not flat: precision falls as recall grows, so the check can fail
        assert any(len({v for v in c if v is not None}) > 2 for c in curves.values())
    g_map = coco_stats(pycoco_eval(truth, g_rows))
    c_map = coco_stats(pycoco_eval(truth, c_rows))
    assert g_map["map"] is not None and c_map["map"] is not None
    assert g_map["map50"] is not None and c_map["map50"] is not None
    assert task["map_drop"] == pytest.approx(100 * (g_map["map"] - c_map["map"]), abs=1e-9)
    assert task["map50_drop"] == pytest.approx(100 * (g_map["map50"] - c_map["map50"]), abs=1e-9)
    assert task["golden_map50"] == pytest.approx(g_map["map50"], abs=1e-12)
    assert task["compressed_map"] == pytest.approx(c_map["map"], abs=1e-12)
    assert task["map50_vs_golden"] == task["against_golden"]["map50"]
    # The noisier copy is worse, and not trivially so: the check can fail.
    assert task["map_drop"] > 1.0 and 0.01 < task["map_vs_golden"] < 0.95

    # The inspector's boxes: each image's detections as the outputs state them (the plain reading), highest
    # score first, and its truth boxes.
    views = report.task_samples
    assert views is not None and views["n_samples"] == N and views["task"] == "detection"
    for i, view in enumerate(views["samples"]):
        for role, rows in (("golden", g_rows[i]), ("compressed", c_rows[i]), ("truth", truth[i])):
            # detections: highest score first, ties in the model's row order (a stable sort); truth: as given
            want = rows if role == "truth" else sorted(rows, key=lambda r: -r[1])
            got = view[role]
            assert [b["label"] for b in got] == [r[2] for r in want]
            flat = [v for b in got for v in b["box"]]
            assert flat == pytest.approx([v for r in want for v in r[0]], abs=1e-3)
            if role != "truth":
                assert [b["score"] for b in got] == pytest.approx([r[1] for r in want], abs=1e-5)

    # Per image: AP@.5 as pycocotools scores that image alone; F1, IoU, missed, added by a plain loop.
    per = report.task_per_sample
    for i in range(N):
        ap = pycoco_eval(g_rows, c_rows, img_ids=[i + 1]).stats[1]
        assert (math.isnan(per["ap50_vs_golden"][i]) and ap < 0) or per["ap50_vs_golden"][i] == pytest.approx(
            ap, abs=1e-12
        )
        plain = plain_matching(g_rows[i], c_rows[i])
        for key, want_v in plain.items():
            got_v = per[f"{key}_vs_golden"][i]
            assert (math.isnan(got_v) and math.isnan(want_v)) or got_v == pytest.approx(want_v, abs=1e-12), (
                i,
                key,
            )
    assert per["golden_detections"].tolist() == [len(r) for r in g_rows]
    assert 0 < np.nanmean(per["f1_50_vs_golden"]) < 1

    # The API serves the block typed: every field declared (tests/backend/test_typed_results.py's rule).
    served = FidelitySummaryOut.model_validate(report.summary_dict())
    assert isinstance(served.outputs["boxes"].task, DetectionTaskOut)  # type: ignore[union-attr]
    assert list(extras(served)) == []


def test_the_golden_model_against_itself_scores_one_and_drops_gate_kneeboard_check() -> None:
    gt_boxes, gt_labels = _scene(3)
    golden = _detector(gt_boxes, gt_labels, 2.0, 4)
    report = _compare(golden, golden, {"gt_boxes": gt_boxes, "gt_labels": gt_labels})
    summary = report.summary_dict()
    task = summary["outputs"]["boxes"]["task"]
    assert task["map_vs_golden"] == 1.0 and task["map50_vs_golden"] == 1.0
    assert task["map_drop"] == 0.0 and task["map50_drop"] == 0.0
    per = report.task_per_sample
    assert (per["f1_50_vs_golden"] == 1).all() and (per["missed_vs_golden"] == 0).all()
    assert (per["added_vs_golden"] == 0).all()

    worse = _compare(
        golden, _detector(gt_boxes, gt_labels, 9.0, 5), {"gt_boxes": gt_boxes, "gt_labels": gt_labels}
    )
    # The task's output is the primary one (not the scores [N, K], which look like a classifier's), so
    # kneeboard check finds the task's metrics without --output.
    assert worse.primary_output == "boxes"
    name, metrics = output_metrics(worse.summary_dict(), None)
    assert name == "boxes"
    drop = metrics["task"]["map50_drop"]
    assert drop > 0.5
    assert not check_limit(metrics, Limit("map50_drop", "max", 0.5)).passed
    _, same = output_metrics(summary, None)
    assert check_limit(same, Limit("map50_drop", "max", 0.5)).passed
    assert not higher_is_better("task.map50_drop") and higher_is_better("task.map50_vs_golden")
    assert higher_is_better("golden_map") and not higher_is_better("map_drop")


def test_padding_empty_predictions_and_nan_boxes_are_scored_not_crashed() -> None:
    gt_boxes, gt_labels = _scene(6)
    golden = _detector(gt_boxes, gt_labels, 2.0, 7)
    # Labels −1 pad instead of a count; the compressed model detects nothing at all.
    no_count = {k: v.copy() for k, v in golden.items() if k != "count"}
    for i in range(N):
        no_count["labels"][i, int(golden["count"][i, 0]) :] = -1
    empty = {**no_count, "labels": np.full((N, K), -1, dtype=np.float32)}
    report = _compare(no_count, empty, {"gt_boxes": gt_boxes, "gt_labels": gt_labels}, count_output=None)
    task = report.summary_dict()["outputs"]["boxes"]["task"]
    g_map = coco_stats(pycoco_eval(_truth_rows(gt_boxes, gt_labels), _rows(golden)))["map"]
    assert g_map is not None and g_map > 0.1
    assert task["golden_map"] == pytest.approx(g_map, abs=1e-12) and task["compressed_map"] == 0.0
    assert task["map_drop"] == pytest.approx(100 * g_map, abs=1e-9) and task["map_vs_golden"] == 0.0
    assert task["detections"]["compressed"] == 0
    assert (report.task_per_sample["compressed_detections"] == 0).all()

    # NaN boxes in the compressed outputs: counted per image, left out, never a crash.
    nan = {k: v.copy() for k, v in golden.items()}
    nan["boxes"][::5, 0, :] = np.nan
    report = _compare(golden, nan, {})
    task = report.summary_dict()["outputs"]["boxes"]["task"]
    flagged = report.task_per_sample["compressed_invalid_boxes"]
    c = golden["count"][:, 0].astype(int)
    # Every row below the count that is NaN or has no area (the jitter leaves a few of those too).
    expected = [sum(not _has_area(nan["boxes"][i, j]) for j in range(c[i])) for i in range(N)]
    assert sum(np.isnan(nan["boxes"][i, 0, 0]) and c[i] > 0 for i in range(N)) >= 5
    assert flagged.tolist() == expected and task["invalid_boxes"]["compressed"] == sum(expected) > 0
    assert task["against_labels"] is None and task["map_drop"] is None  # no truth: label-free only
    assert 0 < task["map_vs_golden"] < 1


def test_the_truth_arrays_are_never_taken_for_the_model_input() -> None:
    # A single-input model takes the dataset's one array of another name; gt_boxes / gt_labels are
    # annotations, not candidates for it (as "labels" and "targets" are not).
    gt_boxes, gt_labels = _scene(10)
    golden = _detector(gt_boxes, gt_labels, 2.0, 11)
    params = FidelityParams(batch_size=7, task="detection", task_options=OPTIONS)
    data = {"frames": np.arange(N, dtype=np.float32)[:, None], "gt_boxes": gt_boxes, "gt_labels": gt_labels}
    report = compare_models(TableRunner(golden), TableRunner(golden), data, None, params)
    assert report.outputs["boxes"]["task"]["map_drop"] == 0.0


def test_wrong_options_and_bad_truth_stop_the_job_at_the_first_batch_saying_why() -> None:
    gt_boxes, gt_labels = _scene(8)
    golden = _detector(gt_boxes, gt_labels, 2.0, 9)
    with pytest.raises(OutputMismatchError, match=r"boxes_output names output 'bbox'.*outputs are \['boxes'"):
        _compare(golden, golden, {}, boxes_output="bbox")
    with pytest.raises(
        OutputMismatchError, match=r"does not know task_options \['nms'\]; it reads \['format'"
    ):
        _compare(golden, golden, {}, nms=0.5)
    with pytest.raises(OutputMismatchError, match="iou_threshold is a number from 0 to 1, not 'high'"):
        _compare(golden, golden, {}, iou_threshold="high")
    with pytest.raises(OutputMismatchError, match="format is 'post_nms' or 'yolo', not 'ssd'"):
        _compare(golden, golden, {}, format="ssd")
    with pytest.raises(OutputMismatchError, match="YOLO head 'scores' has per-sample shape"):
        _compare(golden, golden, {}, format="yolo", head_output="scores", count_output=None)
    bad = gt_boxes.copy()
    bad[3, 0] = np.nan
    labels = gt_labels.copy()
    labels[3, 0] = 1
    with pytest.raises(DatasetMismatchError, match="'gt_boxes' has 1 boxes that are NaN/Inf or have no area"):
        _compare(golden, golden, {"gt_boxes": bad, "gt_labels": labels})
    with pytest.raises(DatasetMismatchError, match="needs both 'gt_boxes' and 'gt_labels'"):
        _compare(golden, golden, {"gt_boxes": gt_boxes})
