"""'Does divergence predict the task?' in the browser (issue 30): a segmentation fidelity job (the small
untrained network of tests/backend/test_task_jobs.py and its 3-bit copy) runs on the embedded stack's real
worker; its report shows the section with Spearman's rho in words as the API serves it, one scatter point per
sample, the disagreeing and the worst samples, and a clicked scatter point opens that sample (the report's
`sample` query, as the per-sample table does). Driven by drive_task_proxy.mjs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kneeboard_client import KneeboardClient
from tests.browser.support import driver_config, run_driver
from tests.support.services import Process
from tests.support.tiny_task_models import TinySegmenter, golden_and_3bit_pair

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_task_proxy.mjs")


def test_the_report_shows_whether_divergence_predicts_the_task(
    tools: tuple[str, str], stack: tuple[str, Process, str], tmp_path: Path
) -> None:
    node, chromium = tools
    base, proc, token = stack
    client = KneeboardClient(base, token=token)
    pid = client.create_project("task proxy")["id"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 1, 12, 12)).astype(np.float32)
    golden, compressed = golden_and_3bit_pair(TinySegmenter(), x, tmp_path)
    np.savez(tmp_path / "seg.npz", input=x, masks=rng.integers(0, 3, (30, 12, 12)))
    models = [client.upload_model(pid, path)["id"] for path in (golden, compressed)]
    for model in models:
        client.wait_model(model)
    dataset = client.upload_dataset(pid, tmp_path / "seg.npz")["id"]
    job = client.create_fidelity_job(pid, *models, dataset, task="segmentation", batch_size=8)
    assert client.wait_job(job["id"], timeout=300)["status"] == "succeeded"
    served = client.http.get(f"/jobs/{job['id']}/fidelity/task").json()
    masks = client.http.get(f"/jobs/{job['id']}/fidelity").json()["summary"]["outputs"]["logits"]["task"]
    masks = masks["against_masks"]
    first = served["metrics"][0]

    seen = run_driver(node, DRIVER, driver_config(base, chromium, "task-proxy", jobId=job["id"]), proc)
    # Nothing failed to load: the clicked sample's inspection of a job without a classification output is its
    # input and divergence row, with no probabilities (it was a 404 and a console error).
    assert seen["notFound"] == []
    assert seen["consoleErrors"] == []
    # The task breakdown: one bar per class and model where the IoU is defined, as the API serves it.
    bars = sum(v is not None for m in ("golden", "compressed") for v in masks[m]["per_class_iou"])
    assert seen["iouBars"] == bars > 0
    assert seen["iouLegend"] == ["golden", "compressed"]
    assert seen["metric"] == first["metric"] == "iou_vs_golden"
    assert f"{first['spearman_rho']:.3f}".rstrip("0") in seen["rhoText"]
    assert seen["points"] == 30
    assert seen["disagreements"] == len(first["disagreements"]) > 0
    assert seen["worstRows"] == 20
    worst = client.http.get(
        f"/jobs/{job['id']}/fidelity/task/samples", params={"metric": "iou_vs_golden", "limit": 1}
    ).json()["items"][0]
    assert seen["worstFirst"] == f"#{worst['sample_index']}"
    assert seen["clickedSample"] is not None and f"sample={seen['clickedSample']}" in seen["hashAfterClick"]
