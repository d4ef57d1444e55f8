"""The sample inspector inside an exported fidelity report (backend/api/offline_inspections.py): over the real
API and Postgres, a fidelity job whose top-k document the engine's recorder made from known logits, on an
image-like .npz uploaded through the API. The file embeds, for the worst samples by KL (the API's own order),
exactly what GET /jobs/{id}/samples/{index} serves, with each picture's URL replaced by a data: URL of exactly
the bytes GET .../input.png serves (decoded with Pillow); their rows join the embedded per-sample rows; other
samples and jobs without top-k embed nothing; the picture budget holds."""

from __future__ import annotations

import base64
import io
import uuid
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from backend.api import offline_inspections
from backend.api.routes import report_export
from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.services.sample_inspector import RESULT_FIDELITY_SAMPLE_TOPK
from backend.settings import Settings
from tests.backend.test_report_export import _download, api, dist, project_id  # noqa: F401 (fixtures)
from tests.backend.test_sample_inspector import CLASSES, TableRunner, _upload
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.fidelity.sample_topk import SampleTopK
from worker.jobs.fidelity import sample_rows
from worker.runtime import json_safe

N = 70
WORST = offline_inspections.INSPECT_MAX


def _job(settings: Settings, project: str, dataset: str, seed: int, with_topk: bool = True) -> str:
    rng = np.random.default_rng(seed)
    golden = rng.normal(size=(N, CLASSES)) * 3
    compressed = golden + rng.normal(size=(N, CLASSES)) * rng.uniform(0.1, 2, size=(N, 1))
    recorder = SampleTopK()
    report = compare_models(
        recorder.wrap(TableRunner(golden), "golden"), recorder.wrap(TableRunner(compressed), "compressed"),
        {"index": np.arange(N, dtype=np.int64)}, None, FidelityParams(batch_size=16),
    )  # fmt: skip
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project), kind="fidelity", status="succeeded", attempts=1,
            params={"golden_model_id": str(uuid.uuid4()), "compressed_model_id": str(uuid.uuid4()),
                    "dataset_id": dataset},
        )  # fmt: skip
        session.add(job)
        session.flush()
        session.add(
            JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=json_safe(report.summary_dict()))
        )
        if with_topk:
            session.add(
                JobResult(job_id=job.id, key=RESULT_FIDELITY_SAMPLE_TOPK, payload=recorder.document(report))
            )
        session.add_all(SampleDivergence(**row) for row in sample_rows(job.id, "logits", report.per_sample))
        session.commit()
        return str(job.id)


@pytest.fixture
def digits(api: TestClient, project_id: str) -> dict[str, Any]:  # noqa: F811
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, size=(N, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=N)
    return _upload(api, {"id": project_id}, input=x, labels=labels)


def _worst(http: TestClient, job: str) -> list[int]:
    page = http.get(
        f"/api/v1/jobs/{job}/fidelity/samples", params={"sort": "kl", "order": "desc", "limit": WORST}
    )
    assert page.status_code == 200, page.text
    return [row["sample_index"] for row in page.json()["items"]]


def test_the_worst_samples_inspections_are_embedded_as_the_api_serves_them(
    api: TestClient,  # noqa: F811
    settings: Settings,
    project_id: str,  # noqa: F811
    digits: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = _job(settings, project_id, digits["id"], seed=3)
    monkeypatch.setattr(report_export, "SAMPLES_MAX", 10)  # fewer rows than the worst: they must be added
    _, doc = _download(api, job, "fidelity")
    worst = _worst(api, job)
    assert doc["inspections"]["indices"] == worst and len(worst) == WORST < N
    assert doc["inspections"]["pictures_left_out"] == 0
    embedded = {k: v for k, v in doc["responses"].items() if "/samples/" in k}
    assert set(embedded) == {f"/api/v1/jobs/{job}/samples/{i}" for i in worst}
    for index in worst:
        path = f"/api/v1/jobs/{job}/samples/{index}"
        served = api.get(path)
        assert served.status_code == 200, served.text
        live, held = served.json(), embedded[path]
        (live_array,) = live["input"]
        (held_array,) = held["input"]
        png = api.get(live_array["thumbnail"])
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        prefix = "data:image/png;base64,"
        assert held_array["thumbnail"].startswith(prefix)
        data = base64.b64decode(held_array["thumbnail"][len(prefix) :])
        assert data == png.content
        assert Image.open(io.BytesIO(data)).size == (256, 256)
        # everything else exactly as served
        held_array["thumbnail"] = live_array["thumbnail"]
        assert held == live
    # the table of the file holds the first rows by index and every inspectable one, in index order
    rows = [r["sample_index"] for r in doc["samples"]["logits"]["rows"]]
    assert rows == sorted(set(range(10)) | set(worst))
    assert doc["samples"]["logits"]["total"] == N


def test_the_picture_budget_and_jobs_without_topk(
    api: TestClient,  # noqa: F811
    settings: Settings,
    project_id: str,  # noqa: F811
    digits: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = _job(settings, project_id, digits["id"], seed=4)
    first = api.get(f"/api/v1/jobs/{job}/samples/{_worst(api, job)[0]}").json()["input"][0]["thumbnail"]
    size = len(api.get(first).content)
    monkeypatch.setattr(offline_inspections, "INSPECT_IMAGE_BYTES", 3 * size)
    _, doc = _download(api, job, "fidelity")
    pictures = [
        v["input"][0]["thumbnail"] for k, v in doc["responses"].items() if "/samples/" in k and v["input"]
    ]
    held = [p for p in pictures if p is not None]
    assert len(pictures) == WORST and 1 <= len(held) <= 3
    assert doc["inspections"]["pictures_left_out"] == WORST - len(held)
    assert sum(len(base64.b64decode(p.split(",", 1)[1])) for p in held) <= 3 * size
    older = _job(settings, project_id, digits["id"], seed=5, with_topk=False)
    _, doc = _download(api, older, "fidelity")
    assert doc["inspections"]["indices"] == [] and not any("/samples/" in k for k in doc["responses"])
