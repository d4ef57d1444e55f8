"""What the budget tests check against: a real fidelity summary of a noisy copy of a small numpy model
with its KL and top-1 agreement computed independently (Measured), a model and a finished fidelity job
stored the way the worker leaves them, a budget made through the API, and a project with a strict budget
and jobs that breach it."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Artifact, Budget, Job, JobResult, Model, utcnow
from backend.db.session import session_factory
from backend.settings import Settings
from tests.backend.test_diagnostics_api import C, D, TwoHeads
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.runtime import json_safe

N = 200


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class Measured:
    """A real fidelity summary of a noisy copy of a model, and its KL / top-1 agreement computed here."""

    def __init__(self, noise: float, seed: int = 3) -> None:
        rng = np.random.default_rng(seed)
        w, v = rng.normal(size=(D, C)), rng.normal(size=(D, 15))
        x = rng.normal(size=(N, D))
        golden = TwoHeads(w, v)
        compressed = TwoHeads(w + rng.normal(scale=noise, size=w.shape), v)
        report = compare_models(golden, compressed, {"x": x}, None, FidelityParams(batch_size=64))
        self.summary: dict[str, Any] = json_safe(report.summary_dict())
        p, q = _softmax(3 * x @ golden.w), _softmax(3 * x @ compressed.w)
        self.kl_mean = float(np.mean(np.sum(p * (np.log(p) - np.log(q)), axis=1)))
        self.top1_match = float(np.mean(p.argmax(axis=1) == q.argmax(axis=1)))


def stored_model(s: Session, project_id: uuid.UUID, name: str, tags: list[str]) -> Model:
    sha = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    s.add(Artifact(sha256=sha, size_bytes=1))
    model = Model(
        project_id=project_id,
        name=name,
        filename=f"{name}.onnx",
        format="onnx",
        artifact_sha256=sha,
        size_bytes=1,
        status="ready",
        tags=tags,
    )
    s.add(model)
    s.flush()
    return model


def finished_job(
    s: Session,
    project_id: uuid.UUID,
    model: Model | None,
    summary: dict[str, Any] | None,
    kind: str = "fidelity",
) -> Job:
    """A job as the worker leaves it: succeeded, its summary stored in the same transaction."""
    params = {"compressed_model_id": str(model.id)} if model else {}
    job = Job(
        project_id=project_id, kind=kind, params=params, status="succeeded", attempts=1, finished_at=utcnow()
    )
    s.add(job)
    s.flush()
    if summary is not None:
        s.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=summary))
    s.commit()
    return job


def create_budget(client: TestClient, project_id: str, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/v1/projects/{project_id}/budgets", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def renamed(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "moved", "rules": rules}


def breaching_setup(settings: Settings, project_id: str, measured: Measured, jobs: int) -> list[uuid.UUID]:
    pid = uuid.UUID(project_id)
    with session_factory(settings.resolved_database_url)() as s:
        s.add(
            Budget(
                project_id=pid,
                name="strict",
                scope="all",
                rules=[{"metric": "kl_mean", "bound": "max", "value": measured.kl_mean / 2}],
            )
        )
        model = stored_model(s, pid, "m", [])
        return [finished_job(s, pid, model, measured.summary).id for _ in range(jobs)]
