"""The sample inspector over the real API and Postgres: a fidelity job whose top-k document the engine's
recorder (worker/engine/fidelity/sample_topk.py) made from known logits, on a dataset uploaded through the API. The
probabilities are checked against scipy's softmax of those logits, the PNG against the uploaded pixels
(decoded with Pillow), the summary against numpy; and the 404s."""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from scipy.special import softmax

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.services.sample_inspector import RESULT_FIDELITY_SAMPLE_TOPK
from backend.settings import Settings
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.fidelity.sample_topk import SampleTopK
from worker.engine.types import TensorSpec
from worker.jobs.fidelity import sample_rows

N, CLASSES = 12, 10


class TableRunner:
    """A model that answers sample i (its input holds i) with row i of a table of logits."""

    def __init__(self, logits: np.ndarray) -> None:
        self.logits = logits

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("index", ("batch",), "int64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec("logits", ("batch", CLASSES), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"logits": self.logits[feeds["index"]]}


def _upload(client: TestClient, project: dict[str, Any], **arrays: np.ndarray) -> dict[str, Any]:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    response = client.post(
        f"/api/v1/projects/{project['id']}/datasets", files={"file": ("d.npz", buf.getvalue())}
    )
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _job(settings: Settings, project_id: str, dataset_id: str, golden: np.ndarray, compressed: np.ndarray,
         labels: np.ndarray | None, with_topk: bool = True) -> str:  # fmt: skip
    recorder = SampleTopK()
    report = compare_models(
        recorder.wrap(TableRunner(golden), "golden"),
        recorder.wrap(TableRunner(compressed), "compressed"),
        {"index": np.arange(N, dtype=np.int64)},
        labels,
        FidelityParams(batch_size=5),
    )
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project_id), kind="fidelity", status="succeeded", attempts=1,
            params={"golden_model_id": str(uuid.uuid4()), "compressed_model_id": str(uuid.uuid4()),
                    "dataset_id": dataset_id},
        )  # fmt: skip
        session.add(job)
        session.flush()
        summary = {
            "n_samples": N,
            "primary_output": "logits",
            "outputs": {"logits": {"kind": "classification"}},
        }
        session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=summary))
        if with_topk:
            session.add(
                JobResult(job_id=job.id, key=RESULT_FIDELITY_SAMPLE_TOPK, payload=recorder.document(report))
            )
        session.add_all(SampleDivergence(**row) for row in sample_rows(job.id, "logits", report.per_sample))
        session.commit()
        return str(job.id)


@pytest.fixture
def digits(client: TestClient, project: dict[str, Any], settings: Settings) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, size=(N, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=N)
    golden = rng.normal(size=(N, CLASSES)) * 3
    compressed = golden + rng.normal(size=(N, CLASSES))
    dataset = _upload(client, project, input=x, labels=labels)
    job = _job(settings, project["id"], dataset["id"], golden, compressed, labels)
    return {
        "x": x,
        "labels": labels,
        "golden": golden,
        "compressed": compressed,
        "job": job,
        "dataset": dataset,
    }


def _check_topk(stored: dict[str, Any], logits: np.ndarray) -> None:
    probs = softmax(logits, axis=0)
    order = np.argsort(-probs, kind="stable")[:5]
    assert stored["classes"] == order.tolist()
    np.testing.assert_allclose(stored["probabilities"], probs[order], rtol=1e-6)


@pytest.mark.parametrize("index", [0, 7, N - 1])
def test_a_sample_has_both_models_topk_its_metrics_label_and_thumbnail(
    client: TestClient, digits: dict[str, Any], index: int
) -> None:
    response = client.get(f"/api/v1/jobs/{digits['job']}/samples/{index}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["index"], body["n_samples"], body["k"]) == (index, N, 5)
    assert body["label"] == int(digits["labels"][index])
    (output,) = body["outputs"]
    assert output["output"] == "logits" and output["outputs_are_probabilities"] == {
        "golden": False, "compressed": False
    }  # fmt: skip
    _check_topk(output["golden"], digits["golden"][index])
    _check_topk(output["compressed"], digits["compressed"][index])
    metrics = body["metrics"]
    assert metrics["sample_index"] == index
    assert metrics["golden_class"] == int(np.argmax(digits["golden"][index]))
    p, q = softmax(digits["golden"][index]), softmax(digits["compressed"][index])
    assert metrics["kl"] == pytest.approx(float(np.sum(p * np.log(p / q))), rel=1e-9)
    (array,) = body["input"]
    sample = digits["x"][index].astype(np.float64)
    assert array["name"] == "input" and array["shape"] == [1, 8, 8]
    assert (array["min"], array["max"]) == (sample.min(), sample.max())
    assert array["mean"] == pytest.approx(sample.mean(), rel=1e-12)
    assert array["std"] == pytest.approx(sample.std(), rel=1e-12)
    assert array["thumbnail"] == f"/api/v1/jobs/{digits['job']}/samples/{index}/input.png?array=input"


def test_the_png_is_the_sample_min_max_scaled_and_enlarged(
    client: TestClient, digits: dict[str, Any]
) -> None:
    index = 3
    response = client.get(f"/api/v1/jobs/{digits['job']}/samples/{index}/input.png?array=input")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "PNG" and image.size == (256, 256) and image.mode == "L"
    pixels = np.asarray(image)
    sample = digits["x"][index, 0].astype(np.float64)
    expected = np.round((sample - sample.min()) / (sample.max() - sample.min()) * 255).astype(np.uint8)
    # each input pixel is a 32x32 block (nearest-neighbour)
    assert np.array_equal(pixels, np.kron(expected, np.ones((32, 32), dtype=np.uint8)))


def test_a_feature_vector_gets_a_summary_and_no_picture(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    rng = np.random.default_rng(9)
    features = rng.normal(size=(N, 16)) * 4 + 1
    dataset = _upload(client, project, features=features)
    job = _job(settings, project["id"], dataset["id"], rng.normal(size=(N, CLASSES)), rng.normal(size=(N, CLASSES)),
               None)  # fmt: skip
    body = client.get(f"/api/v1/jobs/{job}/samples/4").json()
    (array,) = body["input"]
    assert array["thumbnail"] is None and array["shape"] == [16]
    assert array["std"] == pytest.approx(features[4].std(), rel=1e-12)
    assert body["label"] is None
    png = client.get(f"/api/v1/jobs/{job}/samples/4/input.png")
    assert png.status_code == 409, png.text


def test_out_of_range_older_jobs_and_deleted_datasets(
    client: TestClient, project: dict[str, Any], settings: Settings, digits: dict[str, Any]
) -> None:
    job = digits["job"]
    for index in (N, N + 100):
        response = client.get(f"/api/v1/jobs/{job}/samples/{index}")
        assert response.status_code == 404 and f"compared {N} samples" in response.json()["detail"]
        assert client.get(f"/api/v1/jobs/{job}/samples/{index}/input.png").status_code == 404
    assert client.get(f"/api/v1/jobs/{uuid.uuid4()}/samples/0").status_code == 404
    rng = np.random.default_rng(1)
    older = _job(settings, project["id"], digits["dataset"]["id"], rng.normal(size=(N, CLASSES)),
                 rng.normal(size=(N, CLASSES)), None, with_topk=False)  # fmt: skip
    response = client.get(f"/api/v1/jobs/{older}/samples/0")
    assert response.status_code == 404 and "ran before" in response.json()["detail"]
    # the dataset deleted: the probabilities still show, the input says why it is missing
    assert client.delete(f"/api/v1/datasets/{digits['dataset']['id']}").status_code == 204
    body = client.get(f"/api/v1/jobs/{job}/samples/1").json()
    assert body["input"] == [] and "deleted" in body["input_error"]
    _check_topk(body["outputs"][0]["golden"], digits["golden"][1])
    assert client.get(f"/api/v1/jobs/{job}/samples/1/input.png").status_code == 404
