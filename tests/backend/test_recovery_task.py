"""A recovery job that scores a task before and after (issue 30: "recovery before/after"), run in-process by
the real recovery handler over the real app and Postgres: a segmentation CNN trained here, its ONNX export as
the golden model, a 2-bit per-channel configuration recovered by bias correction, and a dataset whose 'masks'
ride beside the pictures. The stored summary carries the task's numbers of the compressed export before
recovery and of the recovered export; the recovered file, downloaded and run in onnxruntime here, gives the
same label-free mIoU computed with scikit-learn's Jaccard score."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from fastapi.testclient import TestClient
from sklearn.metrics import jaccard_score

from backend.api.recovery_schemas import RecoverySummaryOut
from backend.settings import Settings
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.segmentation import CLASSES, IGNORE, scenes, segmentation_files, trained_segmenter
from worker.engine.formats.exporters import export_onnx
from worker.jobs.recovery import RecoveryHandler
from worker.runtime import execute_job

settings, http = app_fixtures("recovery-task")


def _miou(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Dataset mIoU over the classes present in either map (scikit-learn; NaN for the others, left out)."""
    present = sorted(set(np.unique(truth)) | set(np.unique(predicted)))
    assert set(present) <= set(range(CLASSES))
    per_class = jaccard_score(truth.ravel(), predicted.ravel(), labels=present, average=None)
    return float(np.mean(per_class))


def _launch(api: FidelityApi, **params: Any) -> Any:
    body = {
        "golden_model_id": api.golden,
        "dataset_id": api.dataset,
        "config": {"type": "weight_quant", "bits": 2, "per_channel": True},
        "methods": [{"name": "bias_correction"}],
        "max_samples": 64,
        "heldout_fraction": 0.5,
        "batch_size": 16,
    } | params
    return api.http.post(
        "/api/v1/recovery-jobs", json={"project_id": api.project, "params": body}, headers=api.headers
    )


def test_a_recovery_scores_the_task_before_and_after(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    files = segmentation_files(tmp_path)
    api = FidelityApi(http, settings, "recovery-task", files.golden, files.int8, files.dataset)

    launched = _launch(api, task="segmentation", task_options={"ignore_index": IGNORE})
    assert launched.status_code == 201, launched.text
    job_id = launched.json()["id"]
    assert execute_job(job_id, RecoveryHandler(), settings) == "succeeded"
    summary = api.get(f"/jobs/{job_id}/recovery").json()
    typed = RecoverySummaryOut.model_validate(summary)
    assert typed.task is not None and typed.task.task == "segmentation"
    metrics = {m.metric: m for m in typed.task.metrics}
    assert {"miou_vs_golden", "miou_drop", "pixel_agreement"} <= set(metrics)
    assert metrics["miou_vs_golden"].higher_is_better and not metrics["miou_drop"].higher_is_better

    # the recovered export, run here on the held-out samples, against the golden export's own maps
    held = np.asarray(summary["heldout_index"])
    assert len(held) == 32
    model_bytes = api.get(f"/jobs/{job_id}/recovery/model").content
    recovered = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    reference = ort.InferenceSession(str(files.golden), providers=["CPUExecutionProvider"])
    x = files.test_pictures[held]
    golden_maps = reference.run(None, {"input": x})[0].argmax(axis=1)
    recovered_maps = recovered.run(None, {recovered.get_inputs()[0].name: x})[0].argmax(axis=1)
    assert metrics["miou_vs_golden"].after is not None
    assert abs(metrics["miou_vs_golden"].after - _miou(golden_maps, recovered_maps)) < 1e-9
    agreement = float((golden_maps == recovered_maps).mean())
    assert metrics["pixel_agreement"].after is not None
    assert abs(metrics["pixel_agreement"].after - agreement) < 1e-9
    # against the masks: the drop is the golden model's mIoU minus the recovered one's (void pixels left out)
    truth = files.test_masks[held]
    keep = truth != IGNORE
    drop = _miou(truth[keep], golden_maps[keep]) - _miou(truth[keep], recovered_maps[keep])
    assert metrics["miou_drop"].after is not None and abs(metrics["miou_drop"].after - drop) < 1e-9
    # before recovery: the 2-bit copy damaged the maps (the numbers are its own, not the recovered one's)
    before = metrics["miou_vs_golden"].before
    assert before is not None and before < 1.0 and before != metrics["miou_vs_golden"].after
    assert io.BytesIO(model_bytes).getbuffer().nbytes > 0


def test_a_wrong_task_mapping_is_refused_at_launch(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    pictures, masks = scenes(8, seed=3)
    np.savez(tmp_path / "scenes.npz", input=pictures, masks=masks)
    model = trained_segmenter(pictures, masks, epochs=1)
    golden = export_onnx(model, pictures[:2], tmp_path / "golden.onnx", "input", "logits")
    other = export_onnx(model.half().float(), pictures[:2], tmp_path / "other.onnx", "input", "logits")
    api = FidelityApi(http, settings, "recovery-task", golden, other, tmp_path / "scenes.npz")
    refused = _launch(api, task="ctc", task_options={"vocabulary": ["_", "a"]})
    assert refused.status_code == 422, refused.text
    assert "params.task_options" in refused.text
    assert api.get(f"/jobs?project_id={api.project}&kind=recovery").json()["total"] == 0
