"""Exports for people who leave the dashboard: the per-sample table of a fidelity job as CSV (checked against
the JSON pages of the same table and against what was stored), and the team's audit trail filtered by person,
project, action and time, as pages and as CSV, naming each event's project."""

from __future__ import annotations

import csv
import io
import json
import math
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from backend.accounts import Role
from backend.api.app import create_app
from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import AuditEvent, Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files
from tests.support.accounts import TestAccount, account_in

N = 37


def _fidelity_job(
    settings: Settings, project_id: str, status: str = "succeeded"
) -> tuple[str, list[dict[str, Any]]]:
    rng = np.random.default_rng(5)
    rows: list[dict[str, Any]] = []
    for output in ("logits", "embedding"):
        for i in range(N):
            exact = i == 4  # identical outputs: MSE 0, SQNR +inf (stored as NULL)
            rows.append(
                {
                    "output_name": output,
                    "sample_index": i,
                    "kl": None if i % 11 == 0 else float(rng.random() / 3),
                    "cosine": 1.0 if exact else float(rng.random()),
                    "mse": 0.0 if exact else float(rng.random() * 1e-3),
                    "sqnr_db": None if exact else float(rng.normal(30, 5)),
                    "top1_match": bool(i % 4),
                    "golden_class": i % 10,
                    "compressed_class": (i + (i % 4 == 0)) % 10,
                    "label": None if output == "embedding" else i % 10,
                    "flagged": i % 3 == 0,
                    "finite": True,
                }
            )
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(project_id=uuid.UUID(project_id), kind="fidelity", params={}, status=status, attempts=1)
        session.add(job)
        session.flush()
        session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload={}))
        session.add_all(SampleDivergence(job_id=job.id, **row) for row in rows)
        session.commit()
        return str(job.id), rows


def _read_csv(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    return list(csv.DictReader(io.StringIO(response.text)))


def test_the_per_sample_csv_holds_the_whole_table(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    job_id, stored = _fidelity_job(settings, project["id"])
    table = _read_csv(client.get(f"/api/v1/jobs/{job_id}/fidelity/samples.csv"))
    assert len(table) == len(stored) == 2 * N
    assert [(r["output_name"], int(r["sample_index"])) for r in table] == sorted(
        (r["output_name"], r["sample_index"]) for r in stored
    )

    # One output, against the JSON pages of the same table (the API's own per-sample view).
    logits = _read_csv(client.get(f"/api/v1/jobs/{job_id}/fidelity/samples.csv", params={"output": "logits"}))
    pages = client.get(
        f"/api/v1/jobs/{job_id}/fidelity/samples",
        params={"output": "logits", "sort": "sample_index", "order": "asc", "limit": 1000},
    ).json()["items"]
    assert len(logits) == len(pages) == N
    for row, item in zip(logits, pages, strict=True):
        assert int(row["sample_index"]) == item["sample_index"]
        for key in ("kl", "cosine", "mse"):
            assert (row[key] == "" and item[key] is None) or float(row[key]) == item[key], (key, row, item)
        if item["sqnr_db_infinite"]:
            assert row["sqnr_db"] == "inf" and math.isinf(float(row["sqnr_db"]))
        else:
            assert float(row["sqnr_db"]) == item["sqnr_db"]
        assert (
            row["top1_match"] == str(item["top1_match"]).lower()
            and row["flagged"] == str(item["flagged"]).lower()
        )
        assert row["label"] == ("" if item["label"] is None else str(item["label"]))
        assert int(row["golden_class"]) == item["golden_class"]
    assert sum(r["sqnr_db"] == "inf" for r in logits) == 1

    flagged = _read_csv(client.get(f"/api/v1/jobs/{job_id}/fidelity/samples.csv", params={"flagged": True}))
    assert len(flagged) == sum(r["flagged"] for r in stored) and all(r["flagged"] == "true" for r in flagged)

    missing = client.get(f"/api/v1/jobs/{job_id}/fidelity/samples.csv", params={"output": "nope"})
    assert missing.status_code == 404 and "'nope'" in missing.json()["detail"]
    running, _ = _fidelity_job(settings, project["id"], status="running")
    refused = client.get(f"/api/v1/jobs/{running}/fidelity/samples.csv")
    assert refused.status_code == 409 and "running" in refused.json()["detail"]


@pytest.fixture
def member(settings: Settings, account: TestAccount) -> TestAccount:
    return account_in(settings.resolved_database_url, team=account.team_name, role=Role.member)


def test_the_audit_trail_filtered_and_exported(
    client: TestClient, account: TestAccount, member: TestAccount, settings: Settings
) -> None:
    first = client.post("/api/v1/projects", json={"name": "vision"}).json()
    second = client.post("/api/v1/projects", json={"name": "speech"}).json()
    onnx = files.minimal_onnx_bytes()
    client.post(f"/api/v1/projects/{first['id']}/models", files={"file": ("a.onnx", onnx)})
    with TestClient(create_app(settings, run_reaper=False), headers=member.headers) as as_member:
        uploaded = as_member.post(f"/api/v1/projects/{second['id']}/models", files={"file": ("b.onnx", onnx)})
        assert uploaded.status_code == 201, uploaded.text
        as_member.patch(f"/api/v1/models/{uploaded.json()['id']}", json={"tags": ["asr"]})
    # One old event, to filter by time: moved a week back.
    week_ago = datetime.now(UTC) - timedelta(days=7)
    with session_factory(settings.resolved_database_url)() as s:
        s.execute(
            update(AuditEvent)
            .where(AuditEvent.action == "project.created", AuditEvent.resource_id == first["id"])
            .values(created_at=week_ago)
        )
        s.commit()
    audit = f"/api/v1/teams/{account.team_id}/audit"

    def events(**query: Any) -> list[dict[str, Any]]:
        response = client.get(audit, params={"limit": 500} | query)
        assert response.status_code == 200, response.text
        assert response.json()["total"] == len(response.json()["items"])
        return response.json()["items"]  # type: ignore[no-any-return]

    everything = events()
    assert {e["action"] for e in everything} >= {"project.created", "model.uploaded", "model.updated"}
    names = {e["project_id"]: e["project_name"] for e in everything if e["project_id"]}
    assert names == {first["id"]: "vision", second["id"]: "speech"}

    by_member = events(actor=member.username.upper())  # any case
    assert [e["action"] for e in by_member] == ["model.updated", "model.uploaded"]  # newest first
    assert all(e["actor_name"] == member.username for e in by_member)
    assert {e["project_name"] for e in events(project_id=second["id"])} == {"speech"}
    assert [e["action"] for e in events(project_id=second["id"], action="model.updated")] == ["model.updated"]
    recent = events(since=(week_ago + timedelta(days=1)).isoformat())
    assert len(recent) == len(everything) - 1 and first["id"] not in {
        e["resource_id"] for e in recent if e["action"] == "project.created"
    }
    old = events(until=(week_ago + timedelta(seconds=1)).isoformat())
    assert [(e["action"], e["resource_id"]) for e in old] == [("project.created", first["id"])]
    day = week_ago.date().isoformat()  # a bare date is midnight UTC
    assert len(events(since=day, until=(week_ago.date() + timedelta(days=1)).isoformat())) == 1
    bad = client.get(audit, params={"since": "2026-12-04T10:00:00Z", "until": "2026-12-04T09:00:00Z"})
    assert bad.status_code == 422 and "must be later than since" in bad.json()["detail"]

    rows = _read_csv(client.get(f"{audit}.csv", params={"actor": member.username}))
    assert [r["action"] for r in rows] == [e["action"] for e in by_member]
    assert rows[0]["project_name"] == "speech" and json.loads(rows[0]["detail"]) == by_member[0]["detail"]
    assert datetime.fromisoformat(rows[0]["created_at"]) == datetime.fromisoformat(by_member[0]["created_at"])
    assert len(_read_csv(client.get(f"{audit}.csv"))) == len(everything)

    with TestClient(create_app(settings, run_reaper=False), headers=member.headers) as as_member:
        refused = as_member.get(f"{audit}.csv")
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]


def test_a_model_downloads_as_uploaded(client: TestClient, project: dict[str, Any]) -> None:
    """The model page's Download: the very bytes uploaded (sha256 = the model's artifact_sha256) under the
    upload name; an unknown model is a 404. Other teams' members get 404 too (tests/backend/access/)."""
    import hashlib

    data = files.minimal_onnx_bytes()
    model = client.post(f"/api/v1/projects/{project['id']}/models", files={"file": ("golden v2.onnx", data)})
    assert model.status_code == 201, model.text
    response = client.get(f"/api/v1/models/{model.json()['id']}/file")
    assert response.status_code == 200, response.text
    assert response.content == data
    assert hashlib.sha256(response.content).hexdigest() == model.json()["artifact_sha256"]
    assert "golden%20v2.onnx" in response.headers["content-disposition"]
    assert client.get(f"/api/v1/models/{uuid.uuid4()}/file").status_code == 404
