"""A sensitivity job ranked by a task metric (issue 30), run in-process by the real fan-out handler over the real
app and Postgres: the tiny segmentation CNN (tests/support/segmentation.py) exported to ONNX, a dataset whose
'masks' ride beside the inputs, a scan with task "segmentation" and rank_by "miou_drop" in two chunks. The stored
report is typed, its task matrix holds each layer's mIoU drop as scikit-learn computes it on the layer
compressed alone, and its ranking is their order. Launches naming a metric the task does not have, or a task
the model's outputs do not fit, are 422s with words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from fastapi.testclient import TestClient

from backend.api.sensitivity_schemas import SensitivityReportOut
from backend.settings import Settings
from tests.backend.test_sweep_calibration_job import _refusal, _run_fanout
from tests.backend.test_typed_results import extras
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.segmentation import IGNORE, segmentation_files, sklearn_miou
from worker.engine.compression import WeightQuant, as_compressible, compressed
from worker.jobs.sensitivity import SensitivityHandler

settings, http = app_fixtures("sensitivity-task")

CONFIGS = [{"type": "weight_quant", "bits": b, "per_channel": True} for b in (2, 3)]


def _params(api: FidelityApi, **extra: Any) -> dict[str, Any]:
    return {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": CONFIGS,
        "task": "segmentation",
        "task_options": {"ignore_index": IGNORE},
        "rank_by": "miou_drop",
        "batch_size": 16,
        "chunks": 2,
        "importance_methods": [],
        "mixed_precision_bits": [],
    } | extra


def test_a_scan_ranked_by_miou_drop_stores_the_task_matrix_and_its_order(
    http: TestClient, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = segmentation_files(tmp_path)
    api = FidelityApi(http, settings, "sensitivity-task", files.golden, files.int8, files.dataset)
    job_id = _run_fanout(api, "sensitivity", _params(api), SensitivityHandler(), monkeypatch)
    answer = api.get(f"/jobs/{job_id}/sensitivity?cells=true")
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert list(extras(SensitivityReportOut.model_validate(report))) == []  # every new field typed
    assert (report["ranking_metric"], report["task"], report["rank_by"]) == (
        "task.miou_drop",
        "segmentation",
        "miou_drop",
    )
    assert any("whole compressed model" in note for note in report["notes"])

    model = as_compressible(onnx.load(files.golden))
    pictures, masks = files.test_pictures, files.test_masks
    golden_miou = sklearn_miou(masks, model.run({"input": pictures})["logits"].argmax(1))
    rows, columns = report["matrix"]["rows"], report["matrix"]["columns"]
    grid = report["matrix"]["task_metrics"]["miou_drop"]
    drops = np.zeros((len(rows), len(columns)))
    for i, layer in enumerate(rows):
        for j, config in enumerate((WeightQuant(2, per_channel=True), WeightQuant(3, per_channel=True))):
            assert columns[j] == config.id
            with compressed(model, {layer: config}) as (runner, _):
                pred = runner.run({"input": pictures})["logits"].argmax(1)
            drops[i, j] = golden_miou - sklearn_miou(masks, pred)
    assert np.array(grid) == pytest.approx(drops, abs=1e-12)
    mean = dict(zip(rows, drops.mean(axis=1), strict=True))
    assert report["ranking"]["overall"] == sorted(rows, key=lambda layer: -mean[layer])
    for j, column in enumerate(columns):
        by = dict(zip(rows, drops[:, j], strict=True))
        assert report["ranking"]["by_config"][column] == sorted(rows, key=lambda layer: -by[layer])
    cell = next(c for c in report["cells"] if c["layer"] == rows[0] and c["config"] == columns[0])
    assert cell["task_metrics"]["miou_drop"] == grid[0][0] and "miou_vs_golden" in cell["task_metrics"]


def test_a_metric_the_task_lacks_or_a_task_the_outputs_do_not_fit_is_refused_at_launch(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    files = segmentation_files(tmp_path)
    api = FidelityApi(http, settings, "sensitivity-task-bad", files.golden, files.int8, files.dataset)
    words = _refusal(api, _params(api, rank_by="map50_drop"), kind="sensitivity")
    assert "'map50_drop' is not a metric of task 'segmentation'" in words and "miou_drop" in words
    # a CTC task on segmentation logits: the mapping the launch checks against the model's declared outputs
    mapping = _params(api, task="ctc", rank_by="wer_delta", task_options={"vocabulary": ["_", "a"]})
    words = _refusal(api, mapping, kind="sensitivity")
    assert "params.task_options" in words
    assert api.get(f"/jobs?project_id={api.project}&kind=sensitivity").json()["total"] == 0
