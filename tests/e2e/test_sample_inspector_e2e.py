"""The sample inspector and trends on what the real worker writes: a fidelity job of the digits CNN against its
int8 version through the queue; each inspected sample's top-5 equal scipy's softmax of both ONNX files' logits
computed here with onnxruntime, its PNG is the sample's pixels, and the trend holds the job."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image
from scipy.special import softmax

from tests.e2e.conftest import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _probs(path: Any, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    logits = session.run(None, {session.get_inputs()[0].name: x})[0]
    return softmax(np.asarray(logits, dtype=np.float64), axis=1)


def test_inspected_samples_match_onnxruntime(make_stack: Any, demo_files: Any) -> None:
    stack: Stack = make_stack()
    stack.add_worker("w1")
    c = stack.client
    project = c.create_project("inspector")
    golden = c.upload_model(project["id"], demo_files.golden_onnx)
    int8 = c.upload_model(project["id"], demo_files.int8_onnx)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    for model in (golden, int8):
        assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    job = c.create_job(
        project["id"],
        "fidelity",
        {"dataset_id": dataset["id"], "golden_model_id": golden["id"], "compressed_model_id": int8["id"],
         "layer_profile": False, "batch_size": 37},
    )  # fmt: skip
    done = c.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    with np.load(demo_files.test_npz) as data:
        x, labels = data["input"], data["labels"]
    expected = {"golden": _probs(demo_files.golden_onnx, x), "compressed": _probs(demo_files.int8_onnx, x)}
    for index in (0, 100, len(x) - 1):
        response = c.http.get(f"/jobs/{job['id']}/samples/{index}")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["label"] == int(labels[index]) and body["n_samples"] == len(x)
        (output,) = body["outputs"]
        for role, probs in expected.items():
            row = probs[index]
            order = np.argsort(-row, kind="stable")[:5]
            assert output[role]["classes"] == order.tolist()
            np.testing.assert_allclose(output[role]["probabilities"], row[order], rtol=1e-6, atol=1e-12)
        png = c.http.get(body["input"][0]["thumbnail"].removeprefix("/api/v1"))
        assert png.status_code == 200
        image = np.asarray(Image.open(io.BytesIO(png.content)))
        sample = x[index, 0].astype(np.float64)
        scaled = np.round((sample - sample.min()) / (sample.max() - sample.min()) * 255).astype(np.uint8)
        assert np.array_equal(image[::32, ::32], scaled)
    assert c.http.get(f"/jobs/{job['id']}/samples/{len(x)}").status_code == 404
    trend = c.http.get(f"/projects/{project['id']}/trends", params={"golden_model_id": golden["id"]}).json()
    assert [p["job_id"] for p in trend["points"]] == [job["id"]]
    assert trend["points"][0]["compressed"]["name"] == int8["name"]
