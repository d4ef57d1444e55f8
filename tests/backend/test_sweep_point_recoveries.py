"""GET /jobs?sweep_point_id=…: the jobs launched from one sweep point (its recoveries), on Postgres and on
SQLite (the embedded default), so that the sweep page asks the server whether a point was recovered instead
of remembering it in the browser (issue 35: reloading ?point=5 offered "Recover this" again)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.contracts import JobKind
from backend.db.models import Job, JobStatus
from backend.db.session import session_factory
from backend.services.jobs import new_job
from backend.settings import Settings
from tests.support.accounts import account_in
from tests.support.services import REDIS_URL


@pytest.fixture
def client(each_db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=each_db_url,
        broker_url=REDIS_URL,
        artifact_uri=(tmp_path / "artifacts").as_uri(),
        queue_name=f"kneeboard-test-{uuid.uuid4().hex[:8]}",
        seed_demo=False,
    )
    account = account_in(each_db_url, username="tester", team="testers")
    with TestClient(create_app(settings, run_reaper=False), headers=account.headers) as c:
        yield c


def test_the_jobs_of_one_sweep_point(client: TestClient, each_db_url: str) -> None:
    project = client.post("/api/v1/projects", json={"name": "points"}).json()
    pid = uuid.UUID(project["id"])
    sweep = uuid.uuid4()
    start = datetime.now(UTC) - timedelta(hours=1)

    def recovery(point: str | None, minutes: int, status: JobStatus) -> Job:
        params = {"golden_model_id": str(uuid.uuid4()), "methods": [{"name": "bias_correction"}]}
        job = new_job(pid, JobKind.recovery, params | ({"sweep_point_id": point} if point else {}), None)
        job.status, job.created_at = status.value, start + timedelta(minutes=minutes)
        return job

    jobs = [
        recovery(f"{sweep}:3", 1, JobStatus.failed),
        recovery(f"{sweep}:3", 2, JobStatus.succeeded),
        recovery(f"{sweep}:30", 3, JobStatus.succeeded),  # shares the prefix "…:3"
        recovery(f"{sweep}:4", 4, JobStatus.running),
        recovery(f"{uuid.uuid4()}:3", 5, JobStatus.succeeded),  # another sweep's point 3
        recovery(None, 6, JobStatus.succeeded),  # a configuration given as such
    ]
    with session_factory(each_db_url)() as session:
        session.add_all(jobs)
        session.commit()
    ids = [str(j.id) for j in jobs]

    def listed(point: str, **query: str) -> list[str]:
        response = client.get("/api/v1/jobs", params={"sweep_point_id": point, "kind": "recovery"} | query)
        assert response.status_code == 200, response.text
        page = response.json()
        assert page["total"] == len(page["items"])
        return [item["id"] for item in page["items"]]

    assert listed(f"{sweep}:3") == [ids[1], ids[0]]  # newest first, both statuses
    assert listed(f"{sweep}:3", status="succeeded") == [ids[1]]
    assert listed(f"{sweep}:4") == [ids[3]]
    assert listed(f"{sweep}:30") == [ids[2]]
    assert listed(f"{sweep}:5") == []
    assert client.get("/api/v1/jobs", params={"project_id": str(pid)}).json()["total"] == len(jobs)


def test_a_malformed_point_id_is_refused_in_words(client: TestClient) -> None:
    response = client.get("/api/v1/jobs", params={"sweep_point_id": "point-5"})
    assert response.status_code == 422
    assert "sweep_point_id" in response.text and "pattern" in response.text, response.text


def test_the_recoveries_of_a_sensitivity_jobs_plans(client: TestClient, each_db_url: str) -> None:
    """GET /jobs?sensitivity_job_id=…: the recoveries launched from that scan's mixed-precision plans (each
    with its plan's average bits in its params), so "Recover this plan" reads its state from the server."""
    project = client.post("/api/v1/projects", json={"name": "plans"}).json()
    pid = uuid.UUID(project["id"])
    scan, other = uuid.uuid4(), uuid.uuid4()
    start = datetime.now(UTC) - timedelta(hours=1)

    def recovery(scan_id: uuid.UUID | None, bits: float, minutes: int) -> Job:
        params: dict[str, object] = {"golden_model_id": str(uuid.uuid4()), "methods": [{"name": "adaround"}]}
        if scan_id is not None:
            params["sensitivity_plan"] = {"job_id": str(scan_id), "average_bits": bits}
        else:
            params["sweep_point_id"] = f"{scan}:1"  # the scan's id in another field must not match
        job = new_job(pid, JobKind.recovery, params, None)
        job.created_at = start + timedelta(minutes=minutes)
        return job

    jobs = [recovery(scan, 6.0, 1), recovery(scan, 4.5, 2), recovery(other, 6.0, 3), recovery(None, 0, 4)]
    with session_factory(each_db_url)() as session:
        session.add_all(jobs)
        session.commit()
    response = client.get("/api/v1/jobs", params={"sensitivity_job_id": str(scan), "kind": "recovery"})
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [i["id"] for i in items] == [str(jobs[1].id), str(jobs[0].id)]
    assert [i["params"]["sensitivity_plan"]["average_bits"] for i in items] == [4.5, 6.0]
    assert client.get("/api/v1/jobs", params={"sensitivity_job_id": "scan-1"}).status_code == 422
