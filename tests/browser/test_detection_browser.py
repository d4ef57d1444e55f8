"""A detector end to end in the dashboard (issue 30): a tiny YOLO-style detector trained here
(tests/support/tiny_detector.py) and its 5-bit copy, uploaded with pictures and their truth boxes, scored by a
fidelity job with task "detection" on the embedded stack's real worker; the report draws AP@.5 by class for
both models and the PR curves, and the sample inspector draws each model's boxes and the truth over the
sample's picture, as many as the API serves for that sample. Driven by drive_detection.mjs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from backend.api.routes.report_export import DATA_OPEN
from kneeboard_client import KneeboardClient
from tests.browser.support import driver_config, run_driver
from tests.support.services import Process
from tests.support.tiny_detector import scenes, train_tiny_yolo
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.formats.exporters import export_onnx

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_detection.mjs")


def test_a_detector_report_draws_both_models_boxes(
    tools: tuple[str, str], stack: tuple[str, Process, str], tmp_path: Path
) -> None:
    node, chromium = tools
    base, proc, token = stack
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # training took 85 s on two threads on a busy 2-core machine, 13 s on one
    try:
        model = train_tiny_yolo(seed=0)
    finally:
        torch.set_num_threads(threads)
    convs = [name for name, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)]
    copy = compress_module(model, {name: WeightQuant(5) for name in convs})[0].eval()
    sample = scenes(2, seed=1)[0]
    paths = [
        export_onnx(m, sample, tmp_path / f"{t}.onnx", "images", "output0")
        for m, t in ((model, "golden"), (copy, "w5"))
    ]
    pictures, gt_boxes, gt_labels = scenes(24, seed=7)
    np.savez(tmp_path / "scenes.npz", images=pictures, gt_boxes=gt_boxes, gt_labels=gt_labels)

    client = KneeboardClient(base, token=token)
    pid = client.create_project("detector")["id"]
    models = [client.upload_model(pid, path)["id"] for path in paths]
    for m in models:
        client.wait_model(m)
    dataset = client.upload_dataset(pid, tmp_path / "scenes.npz")["id"]
    job = client.create_fidelity_job(
        pid, *models, dataset, task="detection", task_options={"format": "yolo"}, batch_size=8
    )
    assert client.wait_job(job["id"], timeout=300)["status"] == "succeeded"
    task = client.http.get(f"/jobs/{job['id']}/fidelity").json()["summary"]["outputs"]["output0"]["task"]
    # the sample with the most boxes, so the drawing has something to show
    served = [client.http.get(f"/jobs/{job['id']}/samples/{i}/task").json() for i in range(24)]
    index = max(range(24), key=lambda i: len(served[i]["golden"]) + len(served[i]["compressed"]))
    one = served[index]
    assert one["image_size"] == [64.0, 64.0] and len(one["golden"]) > 0

    seen = run_driver(
        node, DRIVER, driver_config(base, chromium, "detection", jobId=job["id"], sample=index), proc
    )
    labels = task["against_labels"]
    bars = sum(c["ap50"] is not None for m in ("golden", "compressed") for c in labels[m]["per_class"])
    assert seen["apBars"] == bars > 0
    assert seen["prCurves"] > 0
    assert seen["boxes"] == {role: len(one[role]) for role in ("truth", "golden", "compressed")}
    assert seen["overlayAligned"] and seen["inspectorErrors"] == 0
    assert seen["goldenAfterUntick"] == 0 and seen["compressedAfterUntick"] == len(one["compressed"])
    # the shareable report inlines the picture the boxes are drawn over
    export = client.http.get(f"/jobs/{job['id']}/export.html").text
    embedded = json.loads(export.split(DATA_OPEN, 1)[1].split("</script>", 1)[0])["responses"]
    kept = embedded[f"/api/v1/jobs/{job['id']}/samples/0/task"]
    assert kept["picture"].startswith("data:image/png;base64,") and kept["golden"] == served[0]["golden"]
    # the inspector of a detector has no class probabilities (a 404 it does not show as an error)
    assert [e for e in seen["consoleErrors"] if "404" not in e] == []
