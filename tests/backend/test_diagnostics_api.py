"""The "why it diverges" routes (backend/api/routes/diagnostics.py): the documents the worker stores for a
fidelity job (per-class damage, sequence fidelity) come back whole and fully typed, and a confusion cell's
samples are the per-sample rows of that cell (checked against numpy on the engine's own per-sample table).

The documents come from the engine (compare_models) on small numpy models, stored the way the fidelity
handler stores them (json_safe, sample_rows)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert
from sqlalchemy.orm import Session

from backend.api.diagnostic_schemas import FidelityClassesOut, FidelitySequenceOut
from backend.contracts import RESULT_FIDELITY_CLASSES, RESULT_FIDELITY_SEQUENCE, RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import engine_for
from backend.settings import Settings
from tests.backend.test_typed_results import extras
from worker.engine.fidelity.compare import FidelityParams, FidelityReport, compare_models
from worker.engine.types import TensorSpec
from worker.jobs.fidelity import sample_rows
from worker.runtime import json_safe

N, D, C, T, H = 120, 6, 4, 5, 3


class TwoHeads:
    """logits = x @ W (N, C) and tokens = x @ V reshaped (N, T, H)."""

    def __init__(self, w: np.ndarray, v: np.ndarray) -> None:
        self.w, self.v = w, v

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("x", ("batch", D), "float64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [
            TensorSpec("logits", ("batch", C), "float64"),
            TensorSpec("tokens", ("batch", T, H), "float64"),
        ]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = np.asarray(feeds["x"])
        return {"logits": 3 * x @ self.w, "tokens": (x @ self.v).reshape(len(x), T, H)}


@pytest.fixture(scope="module")
def report() -> FidelityReport:
    rng = np.random.default_rng(7)
    w, v = rng.normal(size=(D, C)), rng.normal(size=(D, T * H))
    x = rng.normal(size=(N, D))
    labels = (3 * x @ w).argmax(axis=1)
    labels[:10] = (labels[:10] + 1) % C  # the golden model is wrong on a few
    mask = np.ones((N, T), dtype=np.int64)
    mask[::2, 3:] = 0
    golden = TwoHeads(w, v)
    compressed = TwoHeads(w + rng.normal(scale=0.25, size=w.shape), v + rng.normal(scale=0.1, size=v.shape))
    arrays = {"x": x, "attention_mask": mask}
    return compare_models(
        golden, compressed, arrays, labels, FidelityParams(batch_size=32, flip_confidence=0.6)
    )


def _store(settings: Settings, project_id: str, report: FidelityReport | None) -> uuid.UUID:
    params = {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
    with Session(engine_for(settings.resolved_database_url)) as s:
        job = Job(
            project_id=uuid.UUID(project_id), kind="fidelity", params=params, status="succeeded", attempts=1
        )
        s.add(job)
        s.flush()
        s.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload={}))
        if report is not None:
            s.add(
                JobResult(
                    job_id=job.id, key=RESULT_FIDELITY_CLASSES, payload=json_safe(report.classes_dict())
                )
            )
            s.add(
                JobResult(
                    job_id=job.id, key=RESULT_FIDELITY_SEQUENCE, payload=json_safe(report.sequence_dict())
                )
            )
            s.execute(insert(SampleDivergence), sample_rows(job.id, report.primary_output, report.per_sample))
        s.commit()
        return job.id


def test_documents_are_served_whole_and_typed(
    client: TestClient, settings: Settings, project: dict[str, str], report: FidelityReport
) -> None:
    job_id = _store(settings, project["id"], report)
    for path, stored, schema in (
        ("classes", report.classes_dict(), FidelityClassesOut),
        ("sequence", report.sequence_dict(), FidelitySequenceOut),
    ):
        response = client.get(f"/api/v1/jobs/{job_id}/fidelity/{path}")
        assert response.status_code == 200, response.text
        served: dict[str, Any] = response.json()
        assert served == {"job_id": str(job_id), **json_safe(stored)}
        assert not list(extras(schema.model_validate(served))), "a stored field has no schema"
    classes = client.get(f"/api/v1/jobs/{job_id}/fidelity/classes").json()["outputs"]["logits"]
    assert classes["by"] == "label" and classes["confident_flips"]["count"] > 0
    sequence = client.get(f"/api/v1/jobs/{job_id}/fidelity/sequence").json()["outputs"]["tokens"]
    assert sequence["masked"] and sequence["n_tokens"] == N * T - (N // 2) * 2


def test_cell_samples_are_the_rows_of_that_cell(
    client: TestClient, settings: Settings, project: dict[str, str], report: FidelityReport
) -> None:
    job_id = _store(settings, project["id"], report)
    table = report.per_sample
    cells = report.per_class["logits"]["confusion"]["cells"]
    flip = next((g, c, n) for g, c, n in cells if g != c)
    for g, c, count in (flip, next(cell for cell in cells if cell[0] == cell[1])):
        response = client.get(
            f"/api/v1/jobs/{job_id}/fidelity/classes/samples",
            params={"golden_class": g, "compressed_class": c, "limit": 1000},
        )
        assert response.status_code == 200, response.text
        page = response.json()
        expected = np.flatnonzero((table["golden_class"] == g) & (table["compressed_class"] == c))
        assert page["total"] == count == len(expected)
        assert sorted(item["sample_index"] for item in page["items"]) == expected.tolist()
        kls = [item["kl"] for item in page["items"]]
        assert kls == sorted(kls, reverse=True), "highest KL first"


def test_missing_documents_and_bad_cells(
    client: TestClient, settings: Settings, project: dict[str, str]
) -> None:
    job_id = _store(settings, project["id"], None)
    for path in ("classes", "sequence"):
        response = client.get(f"/api/v1/jobs/{job_id}/fidelity/{path}")
        assert response.status_code == 404 and "has no" in response.json()["detail"]
    response = client.get(
        f"/api/v1/jobs/{job_id}/fidelity/classes/samples", params={"golden_class": -1, "compressed_class": 0}
    )
    assert response.status_code == 422
    for past in (
        {"golden_class": 2**31, "compressed_class": 0},
        {"golden_class": 0, "compressed_class": 2**31},
    ):
        # past the database's integer: a 422, not the 500 the fuzz test found
        response = client.get(f"/api/v1/jobs/{job_id}/fidelity/classes/samples", params=past)
        assert response.status_code == 422, response.text
