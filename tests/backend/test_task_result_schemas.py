"""The task blocks the engine writes are typed whole by the fidelity summary's schema (issue 30): a summary
from `compare_models` with a task adapter validates into `FidelitySummaryOut` with no field passed through
untyped, and is served back without losing anything. The models are fixed numpy maps (no training): only
the document's shape is under test here; the numbers are checked in tests/engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.contracts import FidelityJobParams
from tests.backend.test_typed_results import extras, missing
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.jsonable import json_safe
from worker.engine.types import TensorSpec


class _PixelLogits:
    """Per-pixel logits (batch, 3, 8, 8): the input picture times fixed per-class weights."""

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights
        self.inputs = [TensorSpec("x", ("batch", 1, 8, 8), "float32")]
        self.outputs = [TensorSpec("logits", ("batch", 3, 8, 8), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = np.asarray(feeds["x"])
        return {"logits": (x * self.weights[None, :, None, None] + self.weights[None, :, None, None] ** 2)}


def _served(summary: dict[str, Any]) -> dict[str, Any]:
    model = FidelitySummaryOut.model_validate(summary)
    assert list(extras(model)) == []
    served = model.model_dump(mode="json")
    assert list(missing(summary, served)) == []
    return served


def test_a_segmentation_summary_is_typed_whole() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 1, 8, 8)).astype(np.float32)
    masks = rng.integers(0, 3, (10, 8, 8))
    masks[:, 0] = 255
    w = np.array([-1.0, 0.2, 1.0], np.float32)
    params = FidelityParams(batch_size=4, task="segmentation", task_options={"boundary_tolerance": 1})
    report = compare_models(_PixelLogits(w), _PixelLogits(w + 0.3), {"x": x, "masks": masks}, None, params)
    served = _served(json_safe(report.summary_dict()))
    task = served["outputs"]["logits"]["task"]
    assert task["name"] == "segmentation" and task["against_masks"]["golden"]["per_class_iou"]
    assert served["params"]["task_options"] == {"boundary_tolerance": 1}

    without = compare_models(
        _PixelLogits(w), _PixelLogits(w + 0.3), {"x": x}, None, FidelityParams(task="segmentation")
    )
    assert _served(json_safe(without.summary_dict()))["outputs"]["logits"]["task"]["against_masks"] is None


class _FrameLogits:
    """Frame logits (batch, 6, 4): the input frames times a fixed matrix."""

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights
        self.inputs = [TensorSpec("frames", ("batch", 6, 4), "float32")]
        self.outputs = [TensorSpec("logits", ("batch", 6, 4), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"logits": np.asarray(feeds["frames"]) @ self.weights}


def test_a_ctc_summary_is_typed_whole() -> None:
    rng = np.random.default_rng(1)
    frames = rng.standard_normal((9, 6, 4)).astype(np.float32)
    w = np.eye(4, dtype=np.float32)
    noisy = (w + 0.8 * rng.standard_normal((4, 4))).astype(np.float32)
    transcripts = np.array(["a b", "b", "ab a", "", "a", "b b", "a", "ba", "b a"])
    options = {"vocabulary": ["", "|", "a", "b"]}
    params = FidelityParams(batch_size=4, task="ctc", task_options=options)
    data = {"frames": frames, "transcripts": transcripts}
    report = compare_models(_FrameLogits(w), _FrameLogits(noisy), data, None, params)
    served = _served(json_safe(report.summary_dict()))
    task = served["outputs"]["logits"]["task"]
    assert task["name"] == "ctc" and task["against_transcripts"]["golden"]["n_utterances"] == 9
    assert served["params"]["task_options"] == options
    ids = {
        k: "00000000-0000-0000-0000-000000000001"
        for k in ("golden_model_id", "compressed_model_id", "dataset_id")
    }
    assert FidelityJobParams.model_validate({**ids, "task": "ctc", "task_options": options}).task == "ctc"


def test_a_block_of_an_unknown_task_is_refused_not_passed_through() -> None:
    summary = {"outputs": {"y": {"kind": "tensor", "task": {"name": "nonsense", "x": 1}}}}
    with pytest.raises(ValidationError):
        FidelitySummaryOut.model_validate(summary)


def test_the_job_contract_names_the_task() -> None:
    ids = {
        k: "00000000-0000-0000-0000-000000000001"
        for k in ("golden_model_id", "compressed_model_id", "dataset_id")
    }
    assert FidelityJobParams.model_validate({**ids, "task": "segmentation"}).task == "segmentation"
    with pytest.raises(ValidationError):
        FidelityJobParams.model_validate({**ids, "task": "segmentations"})
