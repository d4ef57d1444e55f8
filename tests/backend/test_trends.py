"""Trends over the real API and Postgres: the succeeded fidelity jobs of one golden model's family, oldest
first whatever order they were written in, each with its stored headline numbers, the compressed model's name
and tags and the job's tags; other families, kinds, states and datasets left out; 404s for foreign ids."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Artifact, Dataset, Job, JobResult, Model
from backend.db.session import session_factory
from backend.settings import Settings

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def _model(session: Any, project_id: uuid.UUID, name: str, tags: list[str]) -> uuid.UUID:
    sha = uuid.uuid4().hex * 2
    session.add(Artifact(sha256=sha, size_bytes=1))
    session.flush()
    model = Model(project_id=project_id, name=name, filename=f"{name}.onnx", format="onnx", artifact_sha256=sha,
                  size_bytes=1, status="ready", tags=tags)  # fmt: skip
    session.add(model)
    session.flush()
    return model.id


def _dataset(session: Any, project_id: uuid.UUID, name: str) -> uuid.UUID:
    sha = uuid.uuid4().hex * 2
    session.add(Artifact(sha256=sha, size_bytes=1))
    session.flush()
    dataset = Dataset(project_id=project_id, name=name, filename=f"{name}.npz", kind="npz", artifact_sha256=sha,
                      size_bytes=1, n_samples=10, arrays={})  # fmt: skip
    session.add(dataset)
    session.flush()
    return dataset.id


def _summary(top1: float, kl: float) -> dict[str, Any]:
    return {"n_samples": 10, "primary_output": "logits",
            "outputs": {"logits": {"kind": "classification", "top1_match": top1, "kl_mean_nats": kl}}}  # fmt: skip


@pytest.fixture
def family(settings: Settings, project: dict[str, Any]) -> dict[str, Any]:
    """Golden G with five versions (written out of time order), plus jobs that must not appear."""
    project_id = uuid.UUID(project["id"])
    rng = np.random.default_rng(2)
    with session_factory(settings.resolved_database_url)() as session:
        golden = _model(session, project_id, "golden", ["fp32"])
        other_golden = _model(session, project_id, "other", [])
        versions = [_model(session, project_id, f"v{i}", [f"release-{i}"]) for i in range(5)]
        digits, other_data = _dataset(session, project_id, "digits"), _dataset(session, project_id, "other")
        hours = [3, 0, 4, 1, 2]  # finish times, in hours after T0, in the order the jobs are written
        expected = []
        for i, hour in enumerate(hours):
            top1, kl = float(rng.uniform(0.8, 1)), float(rng.uniform(0, 0.2))
            job = _add_job(session, project_id, golden, versions[i], digits, T0 + timedelta(hours=hour),
                           [f"run-{i}"], _summary(top1, kl))  # fmt: skip
            expected.append((hour, str(job), f"v{i}", f"release-{i}", top1, kl))
        # not in the family: another golden model, another kind, a failed job, another dataset
        _add_job(session, project_id, other_golden, versions[0], digits, T0, [], _summary(0.5, 1.0))
        _add_job(session, project_id, golden, versions[0], digits, T0, [], _summary(0.5, 1.0), kind="sweep")
        _add_job(
            session, project_id, golden, versions[0], digits, T0, [], _summary(0.5, 1.0), status="failed"
        )
        on_other = _add_job(session, project_id, golden, versions[1], other_data, T0 + timedelta(hours=9), [],
                            _summary(0.5, 1.0))  # fmt: skip
        session.commit()
    expected.sort()
    return {"golden": str(golden), "digits": str(digits), "expected": expected, "on_other": str(on_other),
            "other_golden": str(other_golden)}  # fmt: skip


def _add_job(session: Any, project_id: uuid.UUID, golden: uuid.UUID, compressed: uuid.UUID, dataset: uuid.UUID,
             finished: datetime, tags: list[str], summary: dict[str, Any], kind: str = "fidelity",
             status: str = "succeeded") -> uuid.UUID:  # fmt: skip
    job = Job(project_id=project_id, kind=kind, status=status, attempts=1, finished_at=finished, tags=tags,
              params={"golden_model_id": str(golden), "compressed_model_id": str(compressed),
                      "dataset_id": str(dataset)})  # fmt: skip
    session.add(job)
    session.flush()
    session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=summary))
    return job.id


def test_the_family_in_time_order_with_names_tags_and_headlines(
    client: TestClient, project: dict[str, Any], family: dict[str, Any]
) -> None:
    url = f"/api/v1/projects/{project['id']}/trends"
    response = client.get(url, params={"golden_model_id": family["golden"], "dataset_id": family["digits"]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["golden"]["name"] == "golden" and body["total"] == 5
    points = body["points"]
    assert [p["job_id"] for p in points] == [e[1] for e in family["expected"]]
    for point, (_, _, name, tag, top1, kl) in zip(points, family["expected"], strict=True):
        assert point["compressed"]["name"] == name and point["compressed"]["tags"] == [tag]
        assert point["job_tags"] == [f"run-{name[1:]}"] and point["dataset"]["name"] == "digits"
        assert point["headline"]["top1_match"] == top1 and point["headline"]["kl_mean_nats"] == kl
    finished = [p["finished_at"] for p in points]
    assert finished == sorted(finished)
    # without the dataset filter, the job on the other dataset (finished last) joins at the end
    everything = client.get(url, params={"golden_model_id": family["golden"]}).json()
    assert [p["job_id"] for p in everything["points"]] == [e[1] for e in family["expected"]] + [
        family["on_other"]
    ]
    # limit keeps the newest, still oldest first
    newest = client.get(url, params={"golden_model_id": family["golden"], "limit": 2}).json()
    assert [p["job_id"] for p in newest["points"]] == [family["expected"][-1][1], family["on_other"]]
    assert newest["total"] == 6
    assert client.get(url, params={"golden_model_id": family["other_golden"]}).json()["total"] == 1


def test_unknown_or_foreign_ids_are_404(
    client: TestClient, project: dict[str, Any], family: dict[str, Any]
) -> None:
    url = f"/api/v1/projects/{project['id']}/trends"
    assert client.get(url, params={"golden_model_id": str(uuid.uuid4())}).status_code == 404
    assert (
        client.get(
            url, params={"golden_model_id": family["golden"], "dataset_id": str(uuid.uuid4())}
        ).status_code
        == 404
    )
    other = client.post("/api/v1/projects", json={"name": f"q-{uuid.uuid4().hex[:6]}"}).json()
    foreign = client.get(
        f"/api/v1/projects/{other['id']}/trends", params={"golden_model_id": family["golden"]}
    )
    assert foreign.status_code == 404
    assert client.get(url).status_code == 422  # golden_model_id is required
