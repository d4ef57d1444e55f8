"""The detection task on a real model: a tiny YOLO-style detector trained in the test on synthetic pictures
(tests/support/tiny_detector.py), exported to ONNX, against a copy with 6-bit weights, compared by
`compare_models` with task "detection". Every COCO number is checked against pycocotools run here on the
detections of a plain per-anchor decoding of the ONNX models' own outputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tests.support.detection_reference import coco_stats, plain_yolo_decode, pycoco_eval
from tests.support.tiny_detector import scenes, train_tiny_yolo
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.formats.exporters import export_onnx
from worker.engine.loaders import load_model
from worker.engine.types import Runner

SIZE, N = 64, 96


@pytest.fixture(scope="module")
def detectors(one_torch_thread: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Runner, Runner]:
    # One torch thread: training took 85 s on two threads on this busy 2-core machine, 13 s on one.
    model = train_tiny_yolo(seed=0)
    convs = [name for name, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)]
    compressed = compress_module(model, {name: WeightQuant(6) for name in convs})[0].eval()
    out = tmp_path_factory.mktemp("detectors")
    sample = scenes(2, seed=1)[0]
    paths = [
        export_onnx(m, sample, out / f"{tag}.onnx", "images", "output0")
        for m, tag in ((model, "golden"), (compressed, "compressed"))
    ]
    return load_model(paths[0], "onnx"), load_model(paths[1], "onnx")


def _decoded(runner: Runner, pictures: np.ndarray) -> list[Any]:
    head = runner.run({"images": pictures})["output0"]
    return [plain_yolo_decode(head[i], 0.25, 0.45, SIZE) for i in range(len(head))]


def test_a_trained_detector_and_its_6_bit_copy_score_as_pycocotools_scores_them(
    detectors: tuple[Runner, Runner],
) -> None:
    golden, compressed = detectors
    pictures, gt_boxes, gt_labels = scenes(N, seed=7)
    data = {"images": pictures, "gt_boxes": gt_boxes, "gt_labels": gt_labels}
    params = FidelityParams(batch_size=32, task="detection", task_options={"format": "yolo"})
    report = compare_models(golden, compressed, data, None, params)
    task = report.summary_dict()["outputs"]["output0"]["task"]
    assert task["format"] == "yolo" and task["image_size"] == [SIZE, SIZE]  # from the 4-D pictures

    truth = [
        [(gt_boxes[i, j].tolist(), 1.0, int(gt_labels[i, j])) for j in range(3) if gt_labels[i, j] >= 0]
        for i in range(N)
    ]
    g_rows, c_rows = _decoded(golden, pictures), _decoded(compressed, pictures)
    for block, (t, p) in (
        (task["against_labels"]["golden"], (truth, g_rows)),
        (task["against_labels"]["compressed"], (truth, c_rows)),
        (task["against_golden"], (g_rows, c_rows)),
    ):
        want = coco_stats(pycoco_eval(t, p))
        got = {k: block[k] for k in want}
        assert got.keys() == want.keys()
        for k, v in want.items():
            assert (got[k] is None and v is None) or got[k] == pytest.approx(v, abs=1e-12), (k, got, want)
    assert task["detections"] == {"golden": sum(map(len, g_rows)), "compressed": sum(map(len, c_rows))}

    # The detector learnt (chance is ~0 mAP), and 6-bit weights cost it mAP.
    assert task["golden_map50"] > 0.6
    assert task["map50_drop"] > 1.0 and task["map_drop"] > 1.0
    assert 0 < task["map50_vs_golden"] < 1


def test_the_golden_detector_against_itself_scores_one(detectors: tuple[Runner, Runner]) -> None:
    golden, _ = detectors
    pictures, _, _ = scenes(32, seed=8)
    params = FidelityParams(batch_size=16, task="detection", task_options={"format": "yolo"})
    report = compare_models(golden, golden, {"images": pictures}, None, params)
    task = report.summary_dict()["outputs"]["output0"]["task"]
    assert task["map_vs_golden"] == 1.0 and task["map50_vs_golden"] == 1.0
    assert task["against_labels"] is None and task["detections"]["golden"] > 20
    assert (report.task_per_sample["f1_50_vs_golden"] == 1.0).all()
    assert np.nanmin(report.task_per_sample["mean_iou_vs_golden"]) == 1.0
